"""What an ADK user can tune: EventsCompactionConfig's compaction interval (how many
invocations between compactions: not ordered, each value searched on its own) and the
overlap kept."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism


def _compaction(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("compaction_interval", (2, 3, 4, 5, 8, 10), ordered=False),
        Dimension("overlap_size", (0, 1, 2, 3)),
    )


MECHANISMS = (
    Mechanism(
        "events-compaction",
        "ADK EventsCompactionConfig",
        "adk_events_compaction",
        _compaction,
    ),
)
