"""What a setting did to a run: its Outcome (dollars, requests over the limit, risk,
tokens sent, peak and median request, tokens read from the cache), read off a
simulation, summed over runs, and stored (contextsim.analysis.tuning searches with
them).

Units: dollars and tokens. Deterministic; no wall clock.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contextsim.engine.simulate import Simulation


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a setting did to one run (or a sum over runs): dollars, requests over the
    hard limit (`rejected`, must be 0), `risk` (results the setting removed that the
    agent asked for again by the same call), tokens sent over all requests, the largest
    request, requests, tokens read from the cache (`cached`: the hit rate is cached /
    sent) and the median request (`median`, tokens; over several runs, the median of
    the runs' medians weighted by their requests: exact for one run). -1 in `cached`
    or `median`: not known (a result stored before they were kept)."""

    cost: float
    rejected: int
    risk: int
    sent: int
    peak: int
    requests: int
    cached: int = 0
    median: int = 0

    def __add__(self, other: Outcome) -> Outcome:
        """The sum of two runs' outcomes; a median of two is not theirs to sum: -1
        (total_of sums a list with its median)."""
        if not self.requests:
            return other
        if not other.requests:
            return self
        known = self.cached >= 0 and other.cached >= 0
        return Outcome(
            self.cost + other.cost,
            self.rejected + other.rejected,
            self.risk + other.risk,
            self.sent + other.sent,
            max(self.peak, other.peak),
            self.requests + other.requests,
            self.cached + other.cached if known else -1,
            -1,
        )

    @property
    def hit_rate(self) -> float | None:
        """Share of the tokens sent that were read from the cache (None: not known)."""
        if self.cached < 0 or not self.sent:
            return None
        return self.cached / self.sent


NOTHING = Outcome(0.0, 0, 0, 0, 0, 0)


def total_of(outcomes: Sequence[Outcome]) -> Outcome:
    """The outcomes of several runs summed, with the median of their medians weighted
    by their requests (-1 when one is not known)."""
    total = NOTHING
    for o in outcomes:
        total = total + o
    counted = [o for o in outcomes if o.requests]
    if len(counted) < 2:
        return total
    if any(o.median < 0 for o in counted):
        return dataclasses.replace(total, median=-1)
    ordered = sorted(counted, key=lambda o: o.median)
    half, seen = (total.requests + 1) // 2, 0
    for o in ordered:
        seen += o.requests
        if seen >= half:
            return dataclasses.replace(total, median=o.median)
    return total


def outcome_of(figures: Sequence[Any]) -> Outcome:
    """The Outcome of its stored form ([cost, rejected, risk, sent, peak, requests,
    cached, median]; a form of six, stored before the last two were kept, reads them
    as -1: not known)."""
    cost, rejected, risk, sent, peak, requests, *rest = figures
    cached, median = (int(rest[0]), int(rest[1])) if len(rest) == 2 else (-1, -1)
    return Outcome(
        float(cost), int(rejected), int(risk), int(sent), int(peak), int(requests), cached, median
    )


def figures_of(found: Outcome) -> list[Any]:
    """An Outcome's stored form (outcome_of reads it back)."""
    return [
        found.cost,
        found.rejected,
        found.risk,
        found.sent,
        found.peak,
        found.requests,
        found.cached,
        found.median,
    ]


def outcome(sim: Simulation) -> Outcome:
    """A simulation's Outcome (its cost as simulate priced it)."""
    records = sim.records
    return Outcome(
        cost=sum(r.cost for r in records),
        rejected=sum(1 for r in records if r.rejected),
        risk=len(removed_then_asked(sim)),
        sent=sum(r.sent for r in records),
        peak=max((r.sent for r in records), default=0),
        requests=len(records),
        cached=sum(r.cached for r in records),
        median=statistics.median_low([r.sent for r in records]) if records else 0,
    )


def removed_then_asked(sim: Simulation) -> list[tuple[int, int]]:
    """(step, message) where the agent's call repeats an earlier call whose result the
    simulated request no longer held in full (cleared, offloaded, summarized or
    truncated): `message` is that earlier result. The log's calls are taken as they
    were, so this is where the setting most likely would have changed what the agent
    did (it asked again for what it had been shown)."""
    sk = sim.skeleton
    step_of = {r: k for k, r in enumerate(sk.responses) if r is not None}
    last: dict[str, int] = {}
    found = []
    for i, key in enumerate(sk.call_key):
        if not key:
            continue
        earlier = last.get(key)
        last[key] = i
        if earlier is None:
            continue
        call = sk.answers[i]
        step = step_of.get(call) if call >= 0 else None
        if step is None or step >= len(sim.records):
            continue
        letters = sim.dispositions(step)
        if earlier < len(letters) and letters[earlier] != "k":
            found.append((step, earlier))
    return found


FIELDS = ("cost", "rejected", "risk", "sent", "peak", "requests", "cached", "median")
"""An Outcome's fields, in its stored order."""


def measured(replay: Simulation) -> Outcome:
    """What really happened: the replay's Outcome, with the tokens the provider read
    from its cache as it measured them (-1 when a request has no measured usage)."""
    usages = [u for u in replay.skeleton.usage if u is not None]
    found = outcome(replay)
    if len(usages) != found.requests:
        return dataclasses.replace(found, cached=-1)
    return dataclasses.replace(found, cached=sum(u.cache_read for u in usages))
