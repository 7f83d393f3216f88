"""Codex CLI: `~/.codex/config.toml`'s `model_context_window` and
`model_auto_compact_token_limit` for `codex_auto_compact`.

Source: openai/codex, codex-rs/core config (the two top-level keys; the auto-compact
limit defaults to 90% of the context window), compact.rs (the 20,000 tokens of user
messages kept through a compaction, a constant).
"""

from __future__ import annotations

from contextsim.systems.codex.policies import USABLE_PERCENT, CodexParams
from contextsim.systems.exporting import ExportContext, Exporter, Snippet

USER_MESSAGE_TOKENS = 20_000
"""COMPACT_USER_MESSAGE_MAX_TOKENS in codex-rs/core/src/compact.rs: not configurable."""


def auto_compact(ctx: ExportContext) -> tuple[Snippet, ...]:
    """The window and the compaction limit, both written out: the window is the
    params' or, when they leave it to the run, the hard limit."""
    params: CodexParams = ctx.params
    # The hard limit is the usable window, 95% of the model's (as rollouts state it).
    window = params.window or round(ctx.hard_limit * 100 / USABLE_PERCENT)
    limit = params.compact_limit or window * 9 // 10
    text = (
        "# ~/.codex/config.toml\n"
        f"model_context_window = {window}\n"
        f"model_auto_compact_token_limit = {limit}\n"
    )
    notes = [
        "Codex compacts once a response's total tokens (input and output) reach "
        "model_auto_compact_token_limit.",
    ]
    if params.window is None:
        notes.append(
            f"The window is the one whose usable {USABLE_PERCENT}% is the run's hard limit "
            f"({ctx.hard_limit:,}); without model_context_window Codex takes the model's "
            "own (272,000 for gpt-5)."
        )
    if params.user_message_tokens != USER_MESSAGE_TOKENS:
        notes.append(
            f"user_message_tokens ({params.user_message_tokens:,}) cannot be set: Codex "
            f"keeps at most {USER_MESSAGE_TOKENS:,} tokens of user messages."
        )
    notes.append(
        f"summary_tokens ({params.summary_tokens:,}) cannot be set: the summary is as "
        "long as the model writes it."
    )
    return (Snippet("codex", "Codex CLI config.toml", "toml", text, tuple(notes)),)


EXPORTS: dict[str, Exporter] = {"codex_auto_compact": auto_compact}
