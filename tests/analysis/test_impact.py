"""What each problem cost, from prices and sizes worked out here, and the list in the
order of it."""

from __future__ import annotations

import pytest

from contextsim.analysis.impact import input_prices, ranked
from contextsim.analysis.problems import detect
from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import simulate
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart, Usage
from contextsim.registry import POLICIES
from contextsim.truth.costs import Prices

EST = ESTIMATORS["chars4"]
PRICES = Prices("test", 3.0, 15.0, 0.1, 1.25, True)
"""$3 / MTok input, reads at 0.1x ($0.30), writes at 1.25x ($3.75)."""


def _run(usages, size=400):
    messages = [Message("user", (TextPart("task"),))]
    for n, usage in enumerate(usages):
        messages.append(
            Message("assistant", (ToolCallPart(f"c{n}", "read", f'{{"n": {n}}}'),), usage)
        )
        messages.append(Message("tool", (ToolResultPart(f"c{n}", f"{n} " + "x" * size),)))
    return Run("r", tuple(messages))


def _sim(run, policy="as_logged", budget=10**6, hard=10**6):
    sk = build(run, EST)
    return simulate(
        sk, POLICIES[policy], budget=budget, hard_limit=hard, count=EST.count, prices=PRICES
    )


def test_a_measured_cache_miss_costs_the_rewrite_at_write_less_read_price():
    usages = [
        Usage(100, 0, 20_000, 50),
        Usage(100, 20_000, 500, 50),
        Usage(100, 0, 20_700, 50),  # nothing read: 20,500 cached tokens written again
    ]
    sim = _sim(_run(usages))
    (miss,) = [p for p in ranked(detect(sim), sim, PRICES) if p.kind == "cache_break"]
    assert miss.step == 2
    assert miss.tokens == 20_500
    assert miss.dollars == pytest.approx(20_500 * (3.75 - 0.30) / 1e6)
    assert "20,500 tokens written to the cache again" in miss.impact


def test_rejected_requests_cost_what_they_were_sent_for():
    sim = _sim(_run([None] * 30, size=4_000), "none", budget=10_000, hard=12_000)
    problems = ranked(detect(sim), sim, PRICES)
    (rejected,) = [p for p in problems if p.kind == "rejected"]
    streak = [r for r in sim.records if r.rejected]
    assert rejected.tokens == sum(r.sent for r in streak)
    assert rejected.dollars == pytest.approx(sum(r.cost for r in streak))
    assert problems[0] is rejected or problems[0].dollars >= rejected.dollars


def test_over_budget_costs_the_excess_at_each_requests_input_price():
    sim = _sim(_run([None] * 30, size=4_000), "none", budget=10_000, hard=10**6)
    (over,) = [p for p in ranked(detect(sim), sim, PRICES) if p.kind == "over_budget"]
    per = input_prices(sim, PRICES)
    steps = [r for r in sim.records if r.over_budget]
    assert over.tokens == sum(r.sent - 10_000 for r in steps)
    assert over.dollars == pytest.approx(sum((r.sent - 10_000) * per[r.step] for r in steps))


def test_an_oversized_result_costs_its_tokens_at_every_later_request_that_sends_it():
    run = _run([None] * 6, size=400)
    big = list(run.messages)
    big[2] = Message("tool", (ToolResultPart("c0", "y" * 20_000),))
    sim = _sim(Run("r", tuple(big)), "none", budget=8_000, hard=10**6)
    (oversized,) = [p for p in ranked(detect(sim), sim, PRICES) if p.kind == "oversized_result"]
    tokens = sim.skeleton.tokens[2]
    later = [k for k, end in enumerate(sim.skeleton.ends) if end > 2][1:]
    assert oversized.tokens == tokens * len(later)
    per = input_prices(sim, PRICES)
    assert oversized.dollars == pytest.approx(sum(tokens * per[k] for k in later))


def test_the_list_is_ordered_by_cost_and_keeps_step_order_among_equals():
    sim = _sim(_run([None] * 30, size=4_000), "none", budget=10_000, hard=60_000)
    problems = ranked(detect(sim), sim, PRICES)
    costs = [p.dollars for p in problems]
    assert costs == sorted(costs, reverse=True)
    free = [p.step for p in problems if p.dollars == 0]
    assert free == sorted(free)


def test_input_price_of_a_measured_request_is_its_measured_input_cost_per_token():
    usage = Usage(1_000, 9_000, 0, 100)
    sim = _sim(_run([usage]))
    per = input_prices(sim, PRICES)[0]
    paid = (1_000 * 3.0 + 9_000 * 0.30) / 1e6  # output priced apart
    assert per == pytest.approx(paid / sim.records[0].sent)
