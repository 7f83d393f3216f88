"""What a Letta user can tune: the summarizer's message buffer limit and the share of
messages a partial eviction summarizes, and the sliding window's share."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism


def _summarizer(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("message_buffer_limit", tuple(range(20, 151, 10))),
        Dimension(
            "partial_evict_summarizer_percentage", tuple(round(0.1 * k, 1) for k in range(1, 10))
        ),
    )


def _sliding(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("sliding_window_percentage", tuple(round(0.05 * k, 2) for k in range(1, 19))),
    )


MECHANISMS = (
    Mechanism("summarizer", "Letta summarizer (partial eviction)", "letta_summarizer", _summarizer),
    Mechanism("sliding-window", "Letta sliding window", "letta_sliding_window", _sliding),
)
