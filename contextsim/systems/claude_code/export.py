"""Claude Code: the environment variables and settings.json keys that set when it
auto-compacts (`claude_code_auto_compact`), and what can be said of microcompaction
(`claude_code_microcompact`), which no setting controls.

Sources (Claude Code is closed source): its settings documentation
(CLAUDE_CODE_AUTO_COMPACT_WINDOW: the context capacity used for auto-compaction,
capped at the model's window; the `autoCompactWindow` settings key, 100,000 to
1,000,000; CLAUDE_AUTOCOMPACT_PCT_OVERRIDE, which can only lower the threshold), and
public analyses of its bundled code (anthropics/claude-code issues 31806 and 27037:
threshold = window - min(max output, 20,000) - 13,000).
"""

from __future__ import annotations

import json

from contextsim.systems.claude_code.microcompact import COMPACTABLE, MicrocompactParams
from contextsim.systems.claude_code.policies import ClaudeCodeParams
from contextsim.systems.exporting import ExportContext, Exporter, Snippet
from contextsim.truth.prices import model_facts

OUTPUT_CAP = 20_000
"""Claude Code (2.1 on) reserves min(max output, 20,000) tokens of the window."""
BUFFER = 13_000
"""Tokens it keeps free below the effective window (AUTOCOMPACT_BUFFER_TOKENS)."""
SETTING_RANGE = (100_000, 1_000_000)
"""What the `autoCompactWindow` settings key accepts."""
DEFAULT_WINDOW = 200_000


def model_window(model: str) -> int | None:
    """The model's context window from genai-prices, None when unknown."""
    facts = model_facts(model)
    return facts.context_window if facts and facts.context_window else None


def auto_compact(ctx: ExportContext) -> tuple[Snippet, ...]:
    """CLAUDE_CODE_AUTO_COMPACT_WINDOW chosen so that Claude Code's own formula gives
    the simulated threshold (and CLAUDE_CODE_MAX_OUTPUT_TOKENS when the simulated
    reserve is under 20,000)."""
    params: ClaudeCodeParams = ctx.params
    known = model_window(ctx.model)
    window = params.window or known or DEFAULT_WINDOW
    capped = params.capped_output if params.capped_output is not None else True
    reserve = min(params.max_output, OUTPUT_CAP) if capped else params.max_output
    threshold = window - reserve - params.buffer
    env: dict[str, str] = {}
    real_reserve = OUTPUT_CAP
    if capped and params.max_output < OUTPUT_CAP:
        env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(params.max_output)
        real_reserve = params.max_output
    setting = threshold + real_reserve + BUFFER
    env = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(setting), **env}
    notes = [
        f"Claude Code compacts at CLAUDE_CODE_AUTO_COMPACT_WINDOW - min(max output, "
        f"{OUTPUT_CAP:,}) - {BUFFER:,}: here {threshold:,} tokens as the API counts them "
        "(system prompt, tools and injected context included).",
    ]
    if known is not None and setting > known:
        notes.append(
            f"{setting:,} is above the model's window ({known:,}): Claude Code caps it "
            f"there, so it compacts at {known - real_reserve - BUFFER:,}, sooner than "
            "simulated; a later threshold cannot be set."
        )
    elif known is None:
        if params.window is None:
            notes.append(
                f"The model's window is not known here: {DEFAULT_WINDOW:,} is assumed, "
                "as the simulation does."
            )
        notes.append(
            "Claude Code caps CLAUDE_CODE_AUTO_COMPACT_WINDOW at the model's window: a "
            "threshold above the model's window - 33,000 cannot be set."
        )
    if real_reserve < OUTPUT_CAP:
        notes.append(
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS also caps the length of every answer; "
            "a smaller reserve is only had that way."
        )
    if params.capped_output is False:
        notes.append(
            "Versions before 2.1 reserved the whole max output: the setting above gives "
            "the simulated threshold on 2.1 and later."
        )
    notes.append(
        f"summary_tokens ({params.summary_tokens:,}) cannot be set: the summary is as "
        "long as the model writes it."
    )
    low, high = SETTING_RANGE
    in_range = low <= setting <= high
    if not in_range:
        notes.append(
            f"autoCompactWindow in settings.json takes {low:,} to {high:,}: use the "
            "environment variable."
        )
    shell = "".join(f"export {k}={v}\n" for k, v in env.items())
    snippets = [Snippet("claude-code-env", "Claude Code (shell)", "sh", shell, tuple(notes))]
    if in_range:
        settings: dict[str, object] = {"autoCompactWindow": setting}
        rest = {k: v for k, v in env.items() if k != "CLAUDE_CODE_AUTO_COMPACT_WINDOW"}
        if rest:
            settings["env"] = rest
        text = json.dumps(settings, indent=2)
        label = "Claude Code ~/.claude/settings.json"
        snippets.append(Snippet("claude-code-settings", label, "json", text, tuple(notes)))
    return tuple(snippets)


def microcompact(ctx: ExportContext) -> tuple[Snippet, ...]:
    """Nothing to set: the snippet says what Claude Code does by itself, the notes
    which chosen parameters it cannot follow."""
    params: MicrocompactParams = ctx.params
    real = MicrocompactParams()
    text = (
        "# Claude Code has no setting for time-based microcompaction: nothing to set.\n"
        "# Where Anthropic's server-side flag turns it on, after 60 idle minutes it\n"
        "# clears all but the newest 5 results of these tools:\n"
        f"# {', '.join(COMPACTABLE)}.\n"
    )
    notes = [
        "No environment variable or settings.json key sets the idle gap, the results "
        "kept or the tools: these are Claude Code's own (from public analyses of its "
        "code; the feature is gated server-side and may be off for an account).",
        "DISABLE_MICROCOMPACT appears in some users' settings and in older versions' "
        "code, but one analysis found it absent from Claude Code 2.1.220: it is not "
        "a documented way to turn this off.",
    ]
    if params.gap_minutes != real.gap_minutes:
        notes.append(f"gap_minutes ({params.gap_minutes:g}) cannot be set: Claude Code uses 60.")
    if params.keep_recent != real.keep_recent:
        notes.append(f"keep_recent ({params.keep_recent}) cannot be set: Claude Code keeps 5.")
    if tuple(params.compactable_tools) != real.compactable_tools:
        notes.append("compactable_tools cannot be set: Claude Code's list is fixed.")
    return (Snippet("claude-code-env", "Claude Code", "sh", text, tuple(notes)),)


EXPORTS: dict[str, Exporter] = {
    "claude_code_auto_compact": auto_compact,
    "claude_code_microcompact": microcompact,
}
