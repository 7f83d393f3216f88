"""Invariants of every policy over random histories (Hypothesis), and of the seed
policies in particular."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.policy import Context
from contextsim.engine.simulate import simulate
from contextsim.registry import POLICIES as REGISTRY
from contextsim.systems.seed.policies import MythexParams, MythexPlanner
from tests.engine.histories import histories

EST = ESTIMATORS["chars4"]
BUDGETS = st.integers(5_000, 600_000)
SEED = ("none", "turns", "mythex")
POLICIES = tuple(REGISTRY)


def run_sim(run, policy, budget, **params):
    sk = build(run, EST)
    chosen = None
    if params:
        chosen = REGISTRY[policy].Params(**params)
    return sk, simulate(
        sk, REGISTRY[policy], chosen, budget=budget, hard_limit=budget * 3, count=EST.count
    )


@settings(max_examples=150, deadline=None)
@given(histories(), BUDGETS, st.sampled_from(POLICIES))
def test_the_saved_history_is_never_changed(run, budget, policy):
    before = replace(run)
    run_sim(run, policy, budget)
    assert run == before


@settings(max_examples=150, deadline=None)
@given(histories(), BUDGETS, st.sampled_from(POLICIES))
def test_a_tool_call_is_never_separated_from_its_results(run, budget, policy):
    sk, sim = run_sim(run, policy, budget)
    for r in sim.records:
        letters = sim.dispositions(r.step)
        for i in range(r.end):
            call = sk.answers[i]
            if call >= 0:
                assert (letters[i] in "ts") == (letters[call] in "ts"), (r.step, i, call, letters)


@settings(max_examples=150, deadline=None)
@given(histories(), BUDGETS, st.sampled_from(("turns", "mythex")))
def test_turns_and_mythex_always_keep_the_first_message(run, budget, policy):
    _, sim = run_sim(run, policy, budget)
    for r in sim.records:
        assert sim.dispositions(r.step)[0] == "k"


@settings(max_examples=200, deadline=None)
@given(histories(), BUDGETS)
def test_mythex_fits_the_budget_whenever_the_head_and_newest_round_fit(run, budget):
    sk, sim = run_sim(run, "mythex", budget)
    planner = MythexPlanner(Context(sk, budget, budget * 3, EST.count), MythexParams())
    for r in sim.records:
        cb = planner.clear_boundary(r.end)
        newest = planner.rounds.newest(r.end)
        if newest is None:
            continue
        acct = planner.acct
        smallest = acct.span(0, planner.head, cb) + planner.note + acct.span(newest, r.end, cb)
        if smallest <= budget:
            assert r.sent <= budget, (r.step, r.sent, smallest)


@settings(max_examples=200, deadline=None)
@given(histories(), BUDGETS, st.sampled_from((1, 4, 5)))
def test_mythex_clears_whole_batches_or_every_candidate(run, budget, batch):
    sk, sim = run_sim(run, "mythex", budget, batch=batch)
    clearable = sim.accountant.clearable
    for r in sim.records:
        results = [i for i in range(r.end) if sk.result_count[i]]
        if not results:
            continue
        candidates = sum(clearable[i] for i in results[:-1])
        cleared = sum(clearable[i] for i in range(min(r.plan.clear_before, r.end)))
        assert cleared % batch == 0 or cleared == candidates


@settings(max_examples=200, deadline=None)
@given(histories(), BUDGETS)
def test_mythex_never_clears_the_newest_result_and_never_unclears(run, budget):
    sk, sim = run_sim(run, "mythex", budget)
    previous = 0
    for r in sim.records:
        results = [i for i in range(r.end) if sk.result_count[i]]
        if results:
            assert sim.dispositions(r.step)[results[-1]] in "kt"
        assert r.plan.clear_before >= previous
        previous = r.plan.clear_before


@settings(max_examples=150, deadline=None)
@given(histories(), st.integers(0, 60), BUDGETS, st.sampled_from(POLICIES))
def test_request_k_depends_only_on_messages_before_it(run, cut, budget, policy):
    prefix = replace(run, messages=run.messages[: min(cut, len(run.messages))])
    _, short = run_sim(prefix, policy, budget)
    _, full = run_sim(run, policy, budget)
    complete = [r for r in short.records if r.end < len(prefix.messages)]
    for a, b in zip(complete, full.records, strict=False):
        assert (a.end, a.sent, a.plan, a.cached) == (b.end, b.sent, b.plan, b.cached)
        assert short.dispositions(a.step) == full.dispositions(b.step)
