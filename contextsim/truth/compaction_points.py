"""The requests that wrote a session's compaction summaries, as points of its fit.

Claude Code compacts by running an agent of its own (``subagents/agent-acompact-*.jsonl``,
a Run with ``compaction_request``): it sends the session's whole history as it stood,
followed by the compaction prompt, and its usage measures that request. So each one is
one more measured request of the session it compacted: the history at the compaction
(as the log replays it) plus the prompt, against the measured size.

The log does not say which compaction a request wrote; they are paired in order (the
first compaction request of a session with its first logged compaction), which is how
they happen: one at a time, each before the summary it writes.

Units: tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from contextsim.counting.skeleton import Skeleton
from contextsim.model import Run


@dataclass(frozen=True, slots=True)
class CompactionPoint:
    """The compaction request of the session's compaction before message `boundary`:
    `prompt` is the estimator's count of what it sent besides the session's history
    (its own messages), `measured` its measured size (tokens)."""

    boundary: int
    prompt: int
    measured: int


def compaction_points(
    session: Skeleton, requests: Sequence[Skeleton]
) -> tuple[CompactionPoint, ...]:
    """The fit points of `session` from its compaction requests' skeletons (same
    estimator), in the order they ran: the i-th with a measured first request is paired
    with the session's i-th logged compaction. Requests without usage, and any beyond
    the session's compactions, are left out."""
    boundaries = sorted(b for b in session.compactions if b > 0)
    firsts = [(r, found) for r in requests if (found := _first_measured(r)) is not None]
    return tuple(
        CompactionPoint(boundary, sum(request.tokens[:end]), size)
        for boundary, (request, (end, size)) in zip(boundaries, firsts, strict=False)
    )


def _first_measured(request: Skeleton) -> tuple[int, int] | None:
    """(history end, measured tokens) of the request's first call, if it was measured."""
    if not request.ends:
        return None
    usage = request.usage[0]
    if usage is None or usage.context <= 0:
        return None
    return request.ends[0], usage.context


def requests_of(session: Run, runs: Iterable[Run]) -> list[Run]:
    """The compaction requests among `runs` that compacted `session` (theirs is its
    session id), in the order given."""
    if not session.session_id or session.compaction_request:
        return []
    return [r for r in runs if r.compaction_request and r.parent_session_id == session.session_id]
