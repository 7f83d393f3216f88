"""What each problem cost, in tokens and dollars, so the list can put the costliest
first.

A problem's impact is what it made the run pay beyond what it had to (US dollars at
the simulation's prices; tokens as the provider counts them when it reconciles):

- cache_break: the tokens written to the cache again, at the write price less the
  read price (what reading them from the cache would have cost);
- over_budget / underestimate: the tokens above the budget, at the request's own price
  per input token, over every request of the streak;
- rejected: every request of the streak, whole (the model refuses it: it is lost);
- oversized_result / repeated_call: the result's tokens at every request that sent it
  again afterwards, at each request's price per input token;
- no_progress: the requests of the stalled streak, whole;
- the others (early_stop, step_ceiling, compaction, compacted): 0 (no figure is honest).

A request's price per input token is its cost less its output's, over what it sent
(estimate_prices), so a measured request is split at its measured prices."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace
from itertools import accumulate

from contextsim.analysis.problems import Problem
from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.engine.simulate import Simulation
from contextsim.truth.costs import Prices, per_token


def input_prices(sim: Simulation, prices: Prices) -> list[float]:
    """Per request, dollars per token of its input: its cost less its output's, over
    the tokens it sent (0 for a request that sent nothing)."""
    out_price = per_token(prices)[2]
    sk = sim.skeleton
    found = []
    for r in sim.records:
        usage = sk.usage[r.step]
        response = sk.responses[r.step]
        if usage is not None:
            output = usage.output_tokens
        elif response is not None:
            output = max(sk.tokens[response] - MESSAGE_OVERHEAD, 0)
        else:
            output = 0
        paid = max(r.cost - output * out_price, 0.0)
        found.append(paid / r.sent if r.sent else 0.0)
    return found


def ranked(problems: list[Problem], sim: Simulation, prices: Prices) -> list[Problem]:
    """The problems with their impact (tokens, dollars, how it was counted), costliest
    first; problems of equal cost stay in step order."""
    per_input = input_prices(sim, prices)
    new, read, _ = per_token(prices)
    carried = _Carried(sim, per_input)
    out = [_priced(p, sim, per_input, new - read, carried) for p in problems]
    return sorted(out, key=lambda p: -p.dollars)


def _steps(p: Problem) -> range:
    """The requests the problem stands for: its streak, else its own step."""
    first, last = p.span or (p.step, p.step)
    return range(first, last + 1)


def _priced(
    p: Problem, sim: Simulation, per_input: list[float], rewrite: float, carried: _Carried
) -> Problem:
    records = sim.records
    if p.kind == "cache_break":
        return replace(
            p,
            tokens=p.excess,
            dollars=p.excess * rewrite,
            impact=f"{p.excess:,} tokens written to the cache again instead of read",
        )
    if p.kind in ("over_budget", "underestimate"):
        steps = _steps(p)
        # An underestimate's excess is by the provider's count, which the detector knew.
        excess = (
            [p.excess]
            if p.kind == "underestimate"
            else [max(records[k].sent - sim.budget, 0) for k in steps]
        )
        tokens = sum(excess)
        dollars = sum(e * per_input[k] for e, k in zip(excess, steps, strict=True))
        many = f" over {len(steps)} requests" if len(steps) > 1 else ""
        return replace(
            p, tokens=tokens, dollars=dollars, impact=f"{tokens:,} tokens above the budget{many}"
        )
    if p.kind in ("rejected", "no_progress"):
        steps = _steps(p)
        tokens = sum(records[k].sent for k in steps)
        dollars = sum(records[k].cost for k in steps)
        what = "refused by the model" if p.kind == "rejected" else "that brought nothing new"
        return replace(
            p,
            tokens=tokens,
            dollars=dollars,
            impact=f"{len(steps)} request{'s' if len(steps) > 1 else ''} {what}, {tokens:,} tokens",
        )
    if p.kind in ("oversized_result", "repeated_call") and p.message is not None:
        tokens, dollars = carried.cost(p.message)
        return replace(
            p,
            tokens=tokens,
            dollars=dollars,
            impact=f"{tokens:,} tokens sending the result again at later requests",
        )
    return p


class _Carried:
    """What sending one message again at every later request cost (provider tokens).

    A message a request leaves out (cleared, cut, summarized, offloaded) is not sent
    again by a later one: what a policy removes stays removed (true of every policy
    here, and of a log's own compactions). So the requests that send it again are a
    stretch from the one after it arrived, found by bisection: O(log steps) each."""

    def __init__(self, sim: Simulation, per_input: list[float]):
        self.sim = sim
        rec = sim.reconciliation
        self.scale = rec.scale if rec is not None else 1.0
        self.paid = [0.0, *accumulate(per_input)]

    def cost(self, index: int) -> tuple[int, float]:
        sim = self.sim
        sk, records, acct = sim.skeleton, sim.records, sim.accountant
        tokens = round(self.scale * sk.tokens[index])
        first = bisect_right(sk.ends, index) + 1  # the first request that sends it again
        low, high = first, len(records)  # requests [first, high) send it
        while low < high:
            middle = (low + high) // 2
            if acct.disposition(records[middle].plan, index) == "k":
                low = middle + 1
            else:
                high = middle
        again = max(low - first, 0)
        return tokens * again, tokens * (self.paid[low] - self.paid[first]) if again else 0.0
