"""What a LangChain or Deep Agents user can tune: SummarizationMiddleware's token
trigger and the messages it keeps, ContextEditingMiddleware's ClearToolUsesEdit
(trigger x tool uses kept), and Deep Agents' summarization (the fractions of the
window it triggers at and keeps)."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism, share_steps


def _summarization(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("trigger_tokens", share_steps(window, 0.20, 0.90, 0.025)),
        Dimension("keep_messages", tuple(range(2, 31, 2))),
    )


def _clear_tool_uses(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("trigger", share_steps(window, 0.10, 0.90, 0.025)),
        Dimension("keep", tuple(range(1, 11))),
    )


def _deepagents(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("trigger_fraction", tuple(round(0.5 + 0.025 * k, 3) for k in range(19))),
        Dimension("keep_fraction", tuple(round(0.05 + 0.025 * k, 3) for k in range(11))),
    )


MECHANISMS = (
    Mechanism(
        "summarization",
        "LangChain SummarizationMiddleware (trigger tokens, messages kept)",
        "langchain_summarization",
        _summarization,
    ),
    Mechanism(
        "langchain-clear-tool-uses",
        "LangChain ContextEditingMiddleware: ClearToolUsesEdit",
        "langchain_clear_tool_uses",
        _clear_tool_uses,
    ),
    Mechanism(
        "deepagents-summarization",
        "Deep Agents summarization (fractions of the window)",
        "deepagents",
        _deepagents,
    ),
)
