"""Claude Code's own rules for a session's window and its auto-compaction threshold,
per version and model, and what a log reveals of them.

Claude Code is closed source. The facts below are from its public CHANGELOG.md
(anthropics/claude-code) and from public analyses of its bundled code (issues 12004,
23409, 24079, 31806 of that repository), checked against real sessions:

- The threshold is the effective window less a 13,000-token buffer; the effective
  window is the model's window less the output it reserves. Up to 2.0 the whole max
  output was reserved (32,000 for Sonnet 4.5: a 155,000 threshold on a 200k window;
  real 2.0.76 sessions compact at preTokens 155,979); from 2.1 at most 20,000
  (167,000; real 2.1.29 sessions compact at 169,279; 2.1.21 fixed models with large
  output limits compacting too early).
- The window is 200,000 unless the model id asks for 1M (a ``[1m]`` suffix) or the
  model runs on 1M natively in that version (Opus 4.7 from 2.1.117: "was wrongly
  computed against 200K"). Sonnet 4.6 (2.1.49) and Opus 4.6 (2.1.75, some plans) may
  run on 1M by plan or server flag, which the log does not name: the log tells.
- What the log tells: a measured request above 200,000 ran on 1M; a logged automatic
  compaction reveals its threshold (between the request before it and its preTokens);
  a session that went past the version's threshold without compacting reveals that its
  threshold was higher (later versions compact near 187,000 for some models; a 1M plan
  flag or auto-compact switched off would do the same): see
  policies.claude_code_threshold.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contextsim.model import Compaction

BUFFER = 13_000
"""Tokens kept free below the effective window."""
OUTPUT_CAP = 20_000
"""From 2.1, the most output tokens reserved against the window."""
OLD_RESERVE = 32_000
"""Before 2.1, the output reserved (the default max output)."""
STANDARD = 200_000
LARGE = 1_000_000
NATIVE_1M = (("claude-opus-4-7", (2, 1, 117)),)
"""Models Claude Code runs on 1M by itself, from the version given."""


@dataclass(frozen=True, slots=True)
class Window:
    """A session's window in tokens and where it comes from, said for a person."""

    tokens: int
    source: str


def version_of(text: str) -> tuple[int, ...]:
    """ "2.1.141" as (2, 1, 141); () when unreadable."""
    try:
        return tuple(int(x) for x in text.split(".")[:3])
    except ValueError:
        return ()


def threshold_for(window: int, version: str) -> int:
    """The auto-compaction threshold in tokens of `window` under `version` (an
    unreadable version is taken as a current one)."""
    parsed = version_of(version)
    reserve = OLD_RESERVE if parsed and parsed < (2, 1) else OUTPUT_CAP
    return window - reserve - BUFFER


def session_window(
    model: str, version: str, peak: int, compactions: Iterable[Compaction] = ()
) -> Window:
    """The window Claude Code ran this session on (see the module's rules), given its
    largest measured request (`peak`, tokens) and its logged compactions."""
    if "[1m]" in model.lower():
        return Window(LARGE, f"the model id {model} asks for 1M")
    parsed = version_of(version)
    for prefix, since in NATIVE_1M:
        if model.startswith(prefix) and parsed and parsed >= since:
            return Window(LARGE, f"Claude Code {version} runs {prefix} on 1M")
    if peak > STANDARD:
        return Window(LARGE, f"inferred from the log: a request of {peak:,} tokens")
    named = f"Claude Code {version}" if version else "Claude Code"
    return Window(STANDARD, f"{named}'s default for {model or 'its model'}")


KEEPS_THINKING = ("claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-4-6")
"""Models whose earlier turns' thinking stays in the context (Anthropic: from Opus 4.5
on, thinking blocks of previous assistant turns are kept by default); for the others
the API strips it from every turn but the current one."""


def keeps_thinking(model: str) -> bool:
    """Whether `model` reads the thinking of earlier turns ("" or an unknown model: as
    the older models do, it does not)."""
    return model.startswith(KEEPS_THINKING) or "opus-5" in model or "sonnet-5" in model
