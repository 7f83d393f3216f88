"""What a Claude Code user can tune: when auto-compact fires, set by
CLAUDE_CODE_AUTO_COMPACT_WINDOW (or `autoCompactWindow` in settings.json): Claude Code
compacts at that window - min(max output, 20,000) - 13,000 (contextsim.systems.
claude_code.export). The search takes it from what compacts at 40% of the model's window
up to the model's window (it cannot be set above)."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism, share_steps

RESERVE = 33_000
"""Tokens below the setting the threshold keeps free (20,000 of output, a 13,000
buffer: contextsim.systems.claude_code.policies)."""


def _auto_compact(window: int) -> tuple[Dimension, ...]:
    low = (0.40 * window + RESERVE) / window
    values = {v for v in share_steps(window, low, 1.0, 0.001) if v <= window}
    return (Dimension("window", tuple(sorted({*values, window}))),)


MECHANISMS = (
    Mechanism(
        "claude-code-auto-compact",
        "Claude Code's auto-compact window (CLAUDE_CODE_AUTO_COMPACT_WINDOW)",
        "claude_code_auto_compact",
        _auto_compact,
    ),
)
