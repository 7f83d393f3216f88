"""What a user of Anthropic's API (or the Agent SDK) can tune: context editing's
`clear_tool_uses` (the trigger in input tokens, the tool uses kept) and
`clear_thinking` (the thinking turns kept). Usable by any agent whose calls reach
Anthropic's API with the context-management beta."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism, share_steps


def _clear_tool_uses(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("trigger", share_steps(window, 0.10, 0.90, 0.025)),
        Dimension("keep", tuple(range(1, 11))),
    )


def _clear_thinking(window: int) -> tuple[Dimension, ...]:
    return (Dimension("keep", tuple(range(1, 11))),)


MECHANISMS = (
    Mechanism(
        "clear-tool-uses",
        "Anthropic API context editing: clear_tool_uses_20250919",
        "anthropic_clear_tool_uses",
        _clear_tool_uses,
    ),
    Mechanism(
        "clear-thinking",
        "Anthropic API context editing: clear_thinking_20251015",
        "anthropic_clear_thinking",
        _clear_thinking,
    ),
)
