"""A simulation's records as columns, with running totals, kept per skeleton.

A dashboard summarises every request of a run on every view (totals, the peak, streaks
of requests over the limits, the chart's largest request per bucket). For a live run
that grows by a message at a time, as_logged's simulation takes over the records of the
requests that did not change (contextsim.engine.simulate), so the columns of the run it grew
from are taken over too, up to the first record that differs, and only the new records
are read: a view costs the same at 20,000 messages as at 2,000. Any other simulation is
read whole, once.

Units: tokens; dollars for costs; indexes are steps (requests).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress, pairwise
from operator import add, attrgetter, ne
from typing import TypeVar

from contextsim.counting.memory import earlier, kept, remember
from contextsim.engine.simulate import REPLAY, Simulation, StepRecord

N = TypeVar("N", int, float)

LIMIT_KINDS = ("", "over_budget", "rejected")
"""A request's limit flag by code: 0 neither, 1 over budget, 2 rejected."""


@dataclass(frozen=True, slots=True)
class Columns:
    """The records' columns (read-only lists, one item per step) and running totals
    (item i: the first i steps, so n + 1 items). Costs are summed left to right, as
    `sum` did before Python 3.12 (from 3.12 it compensates: the last digits may
    differ from it)."""

    records: tuple[StepRecord, ...]
    sent: list[int]
    codes: list[int]
    """Each step's limit flag (LIMIT_KINDS)."""
    stages: list[str]
    sent_sums: list[int]
    cached_sums: list[int]
    cost_sums: list[float]
    peaks: list[int]
    """Running maximum of `sent` (0 before the first step)."""
    rejected_sums: list[int]
    over_sums: list[int]
    stage_counts: dict[str, int]
    streaks: list[tuple[int, int, str]]
    """(first, last, kind) of each run of consecutive steps with the same limit flag."""
    _buckets: dict[int, list[int]] = field(default_factory=dict)
    _inherited: tuple[dict[int, list[int]], int] = field(default_factory=lambda: ({}, 0))

    def bucket_peaks(self, size: int) -> list[int]:
        """The step of the largest request (the first of equals) in each bucket of
        `size` steps from step 0 on; the buckets wholly taken over from the columns
        these grew from are not looked at again."""
        found = self._buckets.get(size)
        if found is not None:
            return found
        done, keep = self._inherited
        reused = done.get(size, [])[: keep // size]
        sent, n = self.sent, len(self.sent)
        found = reused + [
            max(range(start, min(start + size, n)), key=sent.__getitem__)
            for start in range(len(reused) * size, n, size)
        ]
        self._buckets[size] = found
        return found


def columns(sim: Simulation) -> Columns:
    """The columns of `sim`'s records, kept per skeleton: as_logged's and the last
    what-if's (only as_logged takes records over; each what-if's are as big as its
    run). Reading only the records not taken over from the skeleton it grew from, and
    copying (in C) the kept part of each column; else reading every record."""
    key = ("record_columns", sim.policy if sim.policy == REPLAY else "what-if")
    now: Columns | None = kept(sim.skeleton, key)
    if now is not None and now.records is sim.records:
        return now
    before: Columns | None = now if now is not None else earlier(sim.skeleton, key)
    made = _extended(before, sim.records)
    remember(sim.skeleton, key, made)
    return made


def shared(old: Sequence[StepRecord], new: Sequence[StepRecord]) -> int:
    """How many leading records `new` took over from `old` (the same objects): records
    are taken over as a prefix, so this is found by bisection."""
    low, high = 0, min(len(old), len(new))
    while low < high:
        middle = (low + high + 1) // 2
        if new[middle - 1] is old[middle - 1]:
            low = middle
        else:
            high = middle - 1
    return low


def limit_streaks(codes: Sequence[int], start: int = 0) -> list[tuple[int, int, str]]:
    """(first, last, kind) of each run of equal nonzero codes from `start` on (a run
    that begins before `start` is cut there). Found in C from where the code changes:
    a long run over the budget is one streak whichever its length."""
    n = len(codes)
    if start >= n:
        return []
    changes = compress(range(start + 1, n), map(ne, codes[start + 1 :], codes[start:]))
    bounds = [start, *changes, n]
    return [(a, b - 1, LIMIT_KINDS[codes[a]]) for a, b in pairwise(bounds) if codes[a]]


def _code(record: StepRecord) -> int:
    return 2 if record.rejected else 1 if record.over_budget else 0


def _extended(before: Columns | None, records: tuple[StepRecord, ...]) -> Columns:
    keep = shared(before.records, records) if before is not None else 0
    new = records[keep:]
    if before is None or not keep:
        before, keep = None, 0
    sent = (before.sent[:keep] if before else []) + list(map(attrgetter("sent"), new))
    rejected = list(map(attrgetter("rejected"), new))
    over = list(map(attrgetter("over_budget"), new))
    flagged = any(rejected) or any(over)
    codes = (before.codes[:keep] if before else []) + (
        list(map(_code, new)) if flagged else [0] * len(new)
    )
    stages = (before.stages[:keep] if before else []) + list(map(attrgetter("stage"), new))
    counts = Counter(before.stage_counts) if before else Counter()
    if before:
        counts.subtract(before.stages[keep:])
        # Stages left only in the steps replaced go, so that the others keep the order
        # in which the steps first show them.
        counts = Counter({k: v for k, v in counts.items() if v})
    counts.update(stages[keep:])
    return Columns(
        records,
        sent,
        codes,
        stages,
        _carry(before.sent_sums if before else None, keep, sent[keep:], add),
        _carry(before.cached_sums if before else None, keep, map(attrgetter("cached"), new), add),
        _carry(before.cost_sums if before else None, keep, map(attrgetter("cost"), new), add),
        _carry(before.peaks if before else None, keep, sent[keep:], max),
        _carry(before.rejected_sums if before else None, keep, rejected, add),
        _carry(before.over_sums if before else None, keep, over, add),
        dict(counts),
        _streaks(before, codes, keep),
        {},
        (before._buckets, keep) if before else ({}, 0),
    )


def _carry(
    sums: list[N] | None, keep: int, values: Iterable[N], step: Callable[[N, N], N]
) -> list[N]:
    """Running `step` (sum, max) of `sums`' first `keep` values then of `values`; item
    0 is 0, as `sum` and `max(..., default=0)` start."""
    base: list[N] = sums[: keep + 1] if sums is not None else [0]
    return base + list(accumulate(values, step, initial=base[-1]))[1:]


def _streaks(before: Columns | None, codes: list[int], keep: int) -> list[tuple[int, int, str]]:
    """The streaks of `codes`, those of `before` that end before the first step that
    may differ (`keep`, or the first step of a streak reaching it) taken over."""
    if before is None:
        return limit_streaks(codes)
    start = keep
    taken = [s for s in before.streaks if s[1] < keep - 1]
    if len(taken) < len(before.streaks) and before.streaks[len(taken)][0] < keep:
        start = before.streaks[len(taken)][0]
    return taken + limit_streaks(codes, start)
