"""What a LangChain or Deep Agents user can tune: SummarizationMiddleware's token
trigger and the messages it keeps, ContextEditingMiddleware's ClearToolUsesEdit
(trigger x tool uses kept), and Deep Agents' summarization (the fractions of the
window it triggers at and keeps)."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism, share_steps


def _summarization(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("trigger_tokens", share_steps(window, 0.20, 0.90, 0.05)),
        Dimension("keep_messages", (2, 4, 6, 10, 15, 20, 30)),
    )


def _clear_tool_uses(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("trigger", share_steps(window, 0.10, 0.90, 0.05)),
        Dimension("keep", (1, 2, 3, 4, 5, 6, 8, 10)),
    )


def _deepagents(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("trigger_fraction", (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)),
        Dimension("keep_fraction", (0.05, 0.1, 0.15, 0.2, 0.3)),
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
