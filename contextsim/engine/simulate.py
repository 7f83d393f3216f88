"""Policy x run -> per-step records, the cached prefix and cost of every request.

`simulate` walks the steps once, asks the policy for each request's Plan and accounts
for it with prefix sums: O((S + M) log M) per configuration, no request is copied.
`explain` expands one step into its messages, for the step inspector.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from operator import add, attrgetter, gt, mul
from typing import Any, NamedTuple, cast

from contextsim.counting.builder import build
from contextsim.counting.estimators import MESSAGE_OVERHEAD, Estimator
from contextsim.counting.memory import earlier, per_skeleton, remember
from contextsim.counting.skeleton import KIND_INDEX, Skeleton, without_artifacts
from contextsim.engine.accounting import Accountant
from contextsim.engine.deferral import Deferral, deferred
from contextsim.engine.policy import Context, Plan, Planner, Policy, Statics
from contextsim.engine.replay import replay_log, usage_costs
from contextsim.model import Run
from contextsim.truth.compaction_points import CompactionPoint
from contextsim.truth.costs import PRESETS, Prices, per_token
from contextsim.truth.reconcile import Reconciliation, fit_exact, fit_rows, score, tells_scale

REPLAY = "as_logged"
"""The policy that replays the log (contextsim.engine.as_logged)."""
MAX_TOKENS = 100_000_000
"""The largest budget or hard limit the tools accept, in tokens per request."""


class StepRecord(NamedTuple):
    """One request under one configuration (tokens unless said otherwise).

    `sent` is what the policy sends as the provider counts it (the reconciled size when
    the simulation reconciles, else the estimator's); `estimated` the estimator's count
    of the same request; `full` what `none` would send (estimator's count). `cached` is
    the prefix identical to the previous request (reconciled like `sent`); `cost` the
    estimated dollars; `measured` the logged context, if any. Counts and compositions
    come from the Simulation on demand (they are not needed for every step of every
    sweep). A named tuple: one is
    made per request per configuration, so creation cost matters.
    """

    step: int
    end: int
    sent: int
    full: int
    stage: str
    over_budget: bool
    rejected: bool
    cached: int
    cost: float
    measured: int | None
    plan: Plan
    estimated: int = 0


@dataclass(frozen=True, slots=True)
class Simulation:
    """The outcome of one configuration on one run."""

    skeleton: Skeleton
    policy: str
    params: Any
    budget: int
    hard_limit: int
    records: tuple[StepRecord, ...]
    accountant: Accountant
    statics: Statics
    reconciliation: Reconciliation | None = None

    @property
    def completed(self) -> bool:
        """No request was rejected."""
        return not any(map(attrgetter("rejected"), self.records))

    def dispositions(self, step: int) -> str:
        return self.accountant.dispositions(self.records[step].plan)

    def composition(self, step: int) -> dict[str, int]:
        return self.accountant.composition(self.records[step].plan)

    def kept_by_kind(self, step: int) -> tuple[int, ...]:
        return self.accountant.kept_by_kind(self.records[step].plan)

    def estimated_cached(self, step: int) -> int:
        """The cached prefix of `step` as the estimator counts it (tokens; the record's
        `cached` is reconciled when the simulation is)."""
        if step == 0:
            return 0
        return self.accountant.cached(self.records[step - 1].plan, self.records[step].plan)

    def counts(self, step: int) -> tuple[int, int, int, int]:
        """Messages cleared, truncated, summarized and offloaded at `step`."""
        return self.accountant.counts(self.records[step].plan)


def simulate(
    sk: Skeleton,
    policy: Policy,
    params: Any = None,
    *,
    budget: int,
    hard_limit: int,
    count: Callable[[str], int],
    prices: Prices = PRESETS["anthropic"],
    reconcile: Reconciliation | None = None,
    deferral: Deferral | None = None,
) -> Simulation:
    """Simulate `policy` over every request of the skeleton's run.

    `count` measures fixed texts (notes) with the run's estimator. Budget and hard limit
    are tokens per request, compared with what the provider counts: the reconciled size
    when `reconcile` is given (contextsim.truth.reconcile), else the estimator's. A what-if
    policy (any but as_logged) sees the history without a logged compaction's summaries.
    Under as_logged a request with measured usage costs what its usage does. The policy
    is any object of the Policy protocol (contextsim.registry.POLICIES has them by
    name); `params` its Params, its defaults when None. `deferral`: tools whose
    definitions a what-if defers (contextsim.engine.deferral); `reconcile` should then be
    the fit of the log as it was, not of the deferred skeleton. Raises ValueError for bad
    limits, for a deferral under as_logged (which replays what was sent) or one the log
    cannot take, and as the policy's setup does for parameters it cannot take.
    """
    if budget <= 0 or hard_limit <= 0:
        raise ValueError("budget and hard limit must be positive numbers of tokens")
    chosen = policy
    params = params if params is not None else chosen.Params()
    replay = chosen.name == REPLAY
    if replay and deferral is not None:
        raise ValueError(
            "as_logged replays what was sent; deferring tools is a what-if: choose a policy"
        )
    if not replay:
        sk = without_artifacts(sk)
    if deferral is not None:
        sk = deferred(sk, deferral)
    provider = reconcile.tokens if reconcile is not None else int
    planner: Planner = chosen.setup(Context(sk, budget, hard_limit, count, provider), params)
    acct = getattr(planner, "acct", None) or Accountant(sk, planner.statics)
    if replay:
        records = _replay_records(sk, budget, hard_limit, prices, reconcile, acct.raw)
    else:
        planned = _planned(planner, sk.ends, acct.sent, acct.cached)
        config = _Config(budget, hard_limit, prices, reconcile, acct.raw)
        records = tuple(_records(sk, planned, 0, config, None))
    return Simulation(
        sk, chosen.name, params, budget, hard_limit, records, acct, planner.statics, reconcile
    )


class _Config(NamedTuple):
    budget: int
    hard_limit: int
    prices: Prices
    reconcile: Reconciliation | None
    raw: list[int]


def _records(
    sk: Skeleton,
    planned: Iterator[tuple[Plan, int, int]] | zip[tuple[Plan, int, int]],
    start: int,
    config: _Config,
    paid: tuple[float | None, ...] | None,
) -> list[StepRecord]:
    """The records of steps `start`... from their (plan, estimated, estimated cached);
    `paid` is what each measured request cost (as_logged), else None. A step at a time,
    as a what-if plans them (and the reference of `_replayed_records`' columns)."""
    budget, hard_limit, prices, rec, raw = config
    tokens, responses, usages = sk.tokens, sk.responses, sk.usage
    # The cost per token is fixed per configuration: look it up once, not per request.
    new_price, read_price, out_price = per_token(prices)
    overheads = _overheads(rec, len(sk.ends), paid is not None, sk)
    scale = rec.scale if rec is not None else 1.0
    records = []
    steps = zip(sk.ends[start:], planned, strict=True)
    for k, (end, (plan, estimated, cached)) in enumerate(steps, start):
        sent = estimated
        if overheads is not None:
            # Inlined Reconciliation.tokens (this runs per request). The unlogged part
            # opens every request, so it is in every cached prefix.
            overhead = overheads[k]
            sent = max(round(scale * estimated) + overhead, 1 if estimated else 0)
            if k:
                cached = min(max(round(scale * cached) + overhead, 0), sent)
        response = responses[k]
        output = 0 if response is None else max(tokens[response] - MESSAGE_OVERHEAD, 0)
        usage = usages[k]
        cost = paid[k] if paid is not None else None
        if cost is None:
            cost = (sent - cached) * new_price + cached * read_price + output * out_price
        records.append(
            StepRecord(
                k,
                end,
                sent,
                raw[end],
                plan.stage,
                sent > budget,
                sent > hard_limit,
                cached,
                cost,
                None if usage is None else usage.context,
                plan,
                estimated,
            )
        )
    return records


def _replayed_records(sk: Skeleton, start: int, config: _Config) -> list[StepRecord]:
    """As `_records` for as_logged's steps `start`..., a column at a time: nothing is
    planned, so each figure is a map over the replay log's columns."""
    budget, hard_limit, prices, rec, raw = config
    log = replay_log(sk)
    ends, plans = sk.ends[start:], log.plans[start:]
    estimated = log.estimated[start:]
    sent: Sequence[int] = estimated
    cached: Sequence[int] = log.cached[start:]
    if rec is not None:
        overheads = _overheads(rec, len(sk.ends), True, sk) or []
        times = repeat(rec.scale)
        added = list(map(add, map(round, map(mul, times, estimated)), overheads[start:]))
        sent = [max(a, 1 if e else 0) for a, e in zip(added, estimated, strict=True)]
        times = repeat(rec.scale)
        shared = map(add, map(round, map(mul, times, cached)), overheads[start:])
        shares = list(map(min, map(max, shared, repeat(0)), sent))
        if start == 0 and shares:
            shares[0] = log.cached[0]  # the first request has nothing before it to share
        cached = shares
    new_price, read_price, out_price = per_token(prices)
    tokens, paid = sk.tokens, usage_costs(sk, prices)[start:]
    costs = [
        (s - c) * new_price
        + c * read_price
        + (0 if r is None else max(tokens[r] - MESSAGE_OVERHEAD, 0)) * out_price
        if p is None
        else p
        for s, c, r, p in zip(sent, cached, sk.responses[start:], paid, strict=True)
    ]
    return list(
        map(
            StepRecord,
            range(start, len(sk.ends)),
            ends,
            sent,
            map(raw.__getitem__, ends),
            map(attrgetter("stage"), plans),
            map(gt, sent, repeat(budget)),
            map(gt, sent, repeat(hard_limit)),
            cached,
            costs,
            log.contexts[start:],
            plans,
            estimated,
        )
    )


_LAST_REPLAY = "as_logged_records"


def _replay_records(
    sk: Skeleton,
    budget: int,
    hard_limit: int,
    prices: Prices,
    rec: Reconciliation | None,
    raw: list[int],
) -> tuple[StepRecord, ...]:
    """as_logged's records, the last configuration's kept per skeleton: a skeleton grown
    from one replayed under the same budget, hard limit, prices and reconciliation
    terms takes over the records of the requests that did not change."""
    log = replay_log(sk)
    terms = None if rec is None else (rec.scale, rec.overhead, rec.later)
    key = (budget, hard_limit, prices, terms)
    before = earlier(sk, _LAST_REPLAY)
    keep = log.reused if before is not None and before[0] == key else 0
    new = _replayed_records(sk, keep, _Config(*key[:3], rec, raw))
    records = (before[1][:keep] if keep else ()) + tuple(new)
    remember(sk, _LAST_REPLAY, (key, records))
    return records


def _planned(
    planner: Planner,
    ends: tuple[int, ...],
    sent_of: Callable[[Plan], int],
    cached_of: Callable[[Plan, Plan], int],
) -> Iterator[tuple[Plan, int, int]]:
    """The policy's (plan, estimated, estimated cached) per step, in order (a planner
    keeps state from one request to the next)."""
    previous: Plan | None = None
    for end in ends:
        plan = planner.plan(end)
        yield plan, sent_of(plan), 0 if previous is None else cached_of(previous, plan)
        previous = plan


def reconcile_skeleton(
    sk: Skeleton,
    points: tuple[CompactionPoint, ...] = (),
    exact: bool = False,
    reference: float | None = None,
) -> Reconciliation | None:
    """The run's reconciliation, fitted on what it sent (as_logged, unreconciled) at the
    requests whose usage was measured, and on its compaction requests' `points`; None
    when nothing was measured (see contextsim.truth.reconcile). `exact`: its requests were
    captured whole, so nothing is unlogged (reconcile.fit_exact). `reference`: the scale
    of a captured run of the same model, taken when this run's own requests cannot tell
    a scale from an overhead (source "reference"). Kept while the skeleton lives; a
    skeleton grown from another (a live run's append) that added no measured request
    keeps the other's fit."""
    key = ("fit", points, exact, reference)

    def fitted() -> tuple[list[tuple[int, int, tuple[int, int]]], Reconciliation | None]:
        rows = _measured_rows(sk, points)
        before = earlier(sk, key)
        if before is not None and before[0] == rows:
            return rows, cast(Reconciliation | None, before[1])
        if exact:
            return rows, fit_exact(rows)
        if reference is not None and not tells_scale(rows):
            found = fit_rows(rows, scale=reference)
            return rows, None if found is None else replace(found, source="reference")
        return rows, fit_rows(rows, specs=spec_tokens(sk))

    return per_skeleton(sk, key, fitted)[1]


def spec_tokens(sk: Skeleton) -> int:
    """The estimator's tokens of the tool definitions the log holds (messages of kind
    "tools"), overhead excluded."""
    tools = KIND_INDEX["tools"]
    return sum(
        max(t - MESSAGE_OVERHEAD, 0) for t, k in zip(sk.tokens, sk.kinds, strict=True) if k == tools
    )


def _measured_rows(
    sk: Skeleton, points: tuple[CompactionPoint, ...]
) -> list[tuple[int, int, tuple[int, int]]]:
    """(estimated, measured, (stretch, step)) of every measured request as the log
    replays it; a compaction request counts as the history it compacted (the replayed
    request at its boundary and the messages up to it) plus its own prompt, in the
    stretch before its compaction, at the step of the last request before it."""
    log = replay_log(sk)
    out = list(log.measured)
    if not points:
        return out
    marks = sorted(b for b in sk.compactions if b > 0)
    for point in points:
        step = bisect_right(sk.ends, point.boundary) - 1
        if step < 0:
            continue
        history = log.estimated[step] + sum(sk.tokens[sk.ends[step] : point.boundary])
        mark = (bisect_left(marks, point.boundary), step)
        out.append((history + point.prompt, point.measured, mark))
    return sorted(out, key=lambda row: row[2])


def reconciliation(
    sk: Skeleton,
    *,
    overhead: int | None = None,
    scale: float | None = None,
    points: tuple[CompactionPoint, ...] = (),
    exact: bool = False,
    reference: float | None = None,
) -> Reconciliation | None:
    """The run's reconciliation: fitted (reconcile_skeleton, with `exact` and
    `reference` as there), or with `overhead` (tokens) and/or `scale` set by the person
    in place of the fitted terms, scored against the measured requests (source "set").
    `points` are the run's compaction requests (contextsim.truth.compaction_points), fitted
    and scored too."""
    fitted = reconcile_skeleton(sk, points, exact, reference)
    if overhead is None and scale is None:
        return fitted
    base = fitted or Reconciliation(1.0, 0)
    chosen = Reconciliation(
        scale if scale is not None else base.scale,
        overhead if overhead is not None else base.overhead,
        source="set",
    )
    return scored_on(sk, chosen, points)


def scored_on(
    sk: Skeleton, rec: Reconciliation, points: tuple[CompactionPoint, ...] = ()
) -> Reconciliation:
    """`rec` (set by hand or borrowed from another run) with its errors on this run's
    measured requests, as the log replays them, and on its compaction requests."""
    rows = _measured_rows(sk, points)
    return score(rec, [e for e, _, _ in rows], [m for _, m, _ in rows])


def _overheads(
    rec: Reconciliation | None, steps: int, replay: bool, sk: Skeleton | None = None
) -> list[int] | None:
    """Per step, the unlogged tokens reconciliation adds; None when nothing is
    reconciled. As the log replays it (`replay`), each stretch has its own. A what-if
    follows the stretches nothing logged began (what they add is sent whatever the
    policy) up to the log's first compaction, and keeps the last of them after it: a
    logged compaction's own stretches belong to the log's history, not the what-if's."""
    if rec is None:
        return None
    out = [rec.overhead] * steps
    if replay:
        for first, overhead in rec.later:
            out[first:] = [overhead] * (steps - first)
    elif rec.unlogged:
        logged = compaction_steps(sk) if sk is not None else []
        until = logged[0] if logged else steps
        for first, overhead in rec.later:
            if first in rec.unlogged and first < until:
                out[first:] = [overhead] * (steps - first)
    return out


def compaction_steps(sk: Skeleton) -> list[int]:
    """The first step after each compaction the log records (the first request whose
    history holds the compaction's summary), in order; compactions after the last
    request are left out."""
    out: list[int] = []
    for boundary in sorted(sk.compactions):
        k = bisect_right(sk.ends, boundary)
        if k < len(sk.ends) and (not out or out[-1] != k):
            out.append(k)
    return out


def simulate_run(
    run: Run,
    estimator: Estimator,
    policy: Policy,
    params: Any = None,
    *,
    budget: int,
    hard_limit: int,
) -> Simulation:
    """Build the skeleton of `run` and simulate `policy` on it (see simulate)."""
    sk = build(run, estimator)
    return simulate(sk, policy, params, budget=budget, hard_limit=hard_limit, count=estimator.count)


@dataclass(frozen=True, slots=True)
class SentItem:
    """One item of a request as sent: a message of the history (index) or an inserted
    note (index None). `tokens` is what it costs as sent; `original` before the policy.
    A cleared message ("c") had its body cleared, its thinking, or both
    (Accountant.edits): `body_cleared`, `thinking_cleared`."""

    index: int | None
    role: str
    kind: str
    disposition: str
    tokens: int
    original: int
    body_cleared: bool = False
    thinking_cleared: bool = False


def explain(sim: Simulation, step: int) -> list[SentItem]:
    """The request of `step`, item by item, in the order sent; notes included and the
    messages left out listed where they stood (disposition t or s, 0 tokens sent)."""
    sk, acct = sim.skeleton, sim.accountant
    plan = sim.records[step].plan
    items: list[SentItem] = []
    for i in range(plan.end):
        if i == plan.gap_start and plan.gap_end > plan.gap_start:
            kind = "summary" if plan.gap_kind == "s" else "note"
            items.append(SentItem(None, "user", kind, "k", plan.gap_note, 0))
        letter = acct.disposition(plan, i)
        raw = sk.tokens[i]
        sent = {"k": raw, "t": 0, "s": 0}.get(letter)
        if sent is None or (letter == "k" and acct.turn_save):
            sent = acct.span(
                i, i + 1, plan.clear_before, plan.thinking_before, acct.turn_bound(plan.end)
            )
        body, thinking = acct.edits(plan, i) if letter == "c" else (False, False)
        items.append(SentItem(i, sk.roles[i], sk.kind(i), letter, sent, raw, body, thinking))
    return items
