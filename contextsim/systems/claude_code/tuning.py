"""What a Claude Code user can tune: when auto-compact fires, set by
CLAUDE_CODE_AUTO_COMPACT_WINDOW (or `autoCompactWindow` in settings.json): Claude Code
compacts at that window - min(max output, 20,000) - 13,000 (contextsim.systems.
claude_code.export). The search takes it from what compacts at 40% of the model's window
up to the model's window (it cannot be set above). And whether it defers its MCP tools'
definitions (ENABLE_TOOL_SEARCH: contextsim.systems.claude_code.tool_search)."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism, share_steps
from contextsim.systems.claude_code import tool_search

RESERVE = 33_000
"""Tokens below the setting the threshold keeps free (20,000 of output, a 13,000
buffer: contextsim.systems.claude_code.policies)."""


def _auto_compact(window: int) -> tuple[Dimension, ...]:
    low = (0.40 * window + RESERVE) / window
    values = {v for v in share_steps(window, low, 1.0, 0.001) if v <= window}
    return (Dimension("window", tuple(sorted({*values, window}))),)


def _tool_search(window: int) -> tuple[Dimension, ...]:
    return (Dimension(tool_search.SETTING, tool_search.VALUES, ordered=False),)


MECHANISMS = (
    Mechanism(
        "claude-code-auto-compact",
        "Claude Code's auto-compact window (CLAUDE_CODE_AUTO_COMPACT_WINDOW)",
        "claude_code_auto_compact",
        _auto_compact,
    ),
    Mechanism(
        "claude-code-tool-search",
        "Claude Code's MCP tool search (ENABLE_TOOL_SEARCH; captures only: a session log "
        "holds no tool definitions)",
        "claude_code_auto_compact",
        _tool_search,
        defers=tool_search.deferral,
        configure=tool_search.configure,
    ),
)
