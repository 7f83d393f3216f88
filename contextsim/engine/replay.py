"""What `as_logged` sends at each request of a skeleton, before budgets and
reconciliation, kept per skeleton and extended as a live run grows.

Every view of a run replays its log twice: as the dashboard's default policy and to
fit the reconciliation on the measured requests. Neither depends on the budget, so the
plans and the estimator's counts are worked out once per skeleton; a skeleton grown
from another (contextsim.counting.memory.grown: a live run's appends) reuses the other's requests
and works out only the new ones, so following a run costs what it appends.

Units: tokens under the skeleton's estimator; steps are request indexes.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field

from contextsim.counting.memory import earlier, per_skeleton
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.as_logged import LoggedParams, LoggedPlanner
from contextsim.engine.plan import Plan
from contextsim.engine.policy import Context
from contextsim.model import Usage
from contextsim.truth.costs import Prices
from contextsim.truth.prices import response_cost

_KEY = "replay_log"


@dataclass(frozen=True, slots=True)
class ReplayLog:
    """Per step: as_logged's plan, the estimator's count of the request (tokens) and of
    the prefix it shares with the request before (tokens; 0 at the first). `tokens`,
    `ends`, `compactions` and `head` are the skeleton's, to tell whether a grown
    skeleton can extend this log."""

    plans: tuple[Plan, ...]
    estimated: tuple[int, ...]
    cached: tuple[int, ...]
    contexts: tuple[int | None, ...]
    """The measured context of each request (model.Usage.context), None where none."""
    measured: tuple[tuple[int, int, tuple[int, int]], ...]
    """(estimated, measured, (stretch, step)) of every request with measured usage, in
    step order; the stretch counts the logged compactions before it."""
    tokens: tuple[int, ...]
    ends: tuple[int, ...]
    compactions: tuple[int, ...]
    head: int
    elided: bool = False
    """Whether the skeleton had shortened messages (model.Elision): its plans are not
    extended."""
    reused: int = field(default=0, compare=False)
    """Leading steps taken over from the log of the skeleton this one grew from."""


def replay_log(sk: Skeleton) -> ReplayLog:
    """The skeleton's replayed requests, made once per skeleton: O(new steps) when it
    grew from a skeleton whose log is kept, else O(steps x log compactions)."""
    return per_skeleton(sk, _KEY, lambda: _made(sk, earlier(sk, _KEY)))


def _made(sk: Skeleton, before: ReplayLog | None) -> ReplayLog:
    planner = LoggedPlanner(Context(sk, 1, 1, _no_notes), LoggedParams())
    keep = _reusable(sk, before, planner.head)
    plans = list(before.plans[:keep]) if before is not None and keep else []
    estimated = list(before.estimated[:keep]) if before is not None and keep else []
    cached = list(before.cached[:keep]) if before is not None and keep else []
    measured = list(before.measured) if before is not None and keep else []
    while measured and measured[-1][2][1] >= keep:
        measured.pop()
    acct = planner.acct
    previous = plans[-1] if plans else None
    for end in sk.ends[keep:]:
        plan = planner.plan(end)
        plans.append(plan)
        estimated.append(acct.sent(plan))
        cached.append(0 if previous is None else acct.cached(previous, plan))
        previous = plan
    marks = sorted(b for b in sk.compactions if b > 0)
    for k in range(keep, len(sk.ends)):
        usage = sk.usage[k]
        if usage is not None and usage.context:
            measured.append((estimated[k], usage.context, (bisect_left(marks, sk.ends[k]), k)))
    contexts = before.contexts[:keep] if before is not None and keep else ()
    contexts += tuple(None if u is None else u.context for u in sk.usage[keep:])
    return ReplayLog(
        tuple(plans),
        tuple(estimated),
        tuple(cached),
        contexts,
        tuple(measured),
        sk.tokens,
        sk.ends,
        sk.compactions,
        planner.head,
        bool(sk.elisions),
        keep,
    )


def usage_costs(sk: Skeleton, prices: Prices) -> tuple[float | None, ...]:
    """Per step, the dollars its measured usage cost (None where nothing was measured):
    genai-prices' figure for a model it knows (its tiers applied), else the flat
    `prices`'. Kept per skeleton and prices, extended as the skeleton grows."""
    key = ("usage_costs", prices)

    def made() -> tuple[float | None, ...]:
        before: tuple[float | None, ...] | None = earlier(sk, key)
        keep = max(len(before) - 1, 0) if before is not None else 0
        price = _usage_pricer(prices)
        new = [None if u is None else price(u) for u in sk.usage[keep:]]
        return (before[:keep] if before is not None else ()) + tuple(new)

    return per_skeleton(sk, key, made)


def measured_total(sk: Skeleton, prices: Prices) -> float | None:
    """Dollars the run's measured usage cost (usage_costs summed, to the micro-dollar);
    None when the log measured nothing."""
    costs = usage_costs(sk, prices)
    if all(c is None for c in costs):
        return None
    return round(sum(filter(None, costs)), 6)


def _usage_pricer(prices: Prices) -> Callable[[Usage], float]:
    """Each response at its own model's prices (prices.response_cost); one with no
    price costs 0 here, and the run's pages name its model (prices.unpriced_models)."""
    model = prices.model
    return lambda usage: response_cost(model, usage, prices) or 0.0


def _reusable(sk: Skeleton, before: ReplayLog | None, head: int) -> int:
    """How many leading steps of `before` hold for `sk`: all but its last (which the
    new messages may have completed), when `sk` has the same messages and requests up
    to there and no compaction or shortened message that reaches back into them."""
    if before is None or sk.elisions or before.elided or head != before.head:
        return 0
    keep = len(before.ends) - 1
    if keep <= 0 or sk.ends[:keep] != before.ends[:keep]:
        return 0
    if sk.tokens[: len(before.tokens)] != before.tokens:
        return 0
    known = len(before.compactions)
    if sk.compactions[:known] != before.compactions:
        return 0
    reach = before.ends[keep - 1]
    if any(b < reach for b in sk.compactions[known:]):
        return 0
    return keep


def _no_notes(text: str) -> int:
    raise AssertionError("as_logged writes no notes")
