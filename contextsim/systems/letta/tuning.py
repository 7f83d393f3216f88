"""What a Letta user can tune: the summarizer's message buffer limit and the share of
messages a partial eviction summarizes, and the sliding window's share."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism


def _summarizer(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("message_buffer_limit", (20, 30, 40, 60, 80, 100, 150)),
        Dimension("partial_evict_summarizer_percentage", (0.1, 0.2, 0.3, 0.5, 0.7)),
    )


def _sliding(window: int) -> tuple[Dimension, ...]:
    return (Dimension("sliding_window_percentage", (0.1, 0.2, 0.3, 0.4, 0.5, 0.7)),)


MECHANISMS = (
    Mechanism("summarizer", "Letta summarizer (partial eviction)", "letta_summarizer", _summarizer),
    Mechanism("sliding-window", "Letta sliding window", "letta_sliding_window", _sliding),
)
