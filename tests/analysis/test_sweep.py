"""Sweeps: the grid of configurations, budgets from text, cell outcomes and totals."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.analysis.problems import detect
from contextsim.analysis.sweep import (
    MAX_CONFIGS,
    Config,
    Outcome,
    SweepError,
    grid,
    outcome,
    parse_budgets,
    parse_settings,
    totals,
)
from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import simulate
from contextsim.registry import POLICIES
from tests.engine.histories import histories

CHARS4 = ESTIMATORS["chars4"]


def test_grid_pairs_every_policy_with_every_budget_ascending_without_repeats():
    configs = grid(["turns", "mythex"], [400_000, 100_000, 400_000])
    assert [(c.policy, c.budget) for c in configs] == [
        ("turns", 100_000),
        ("turns", 400_000),
        ("mythex", 100_000),
        ("mythex", 400_000),
    ]


def test_grid_carries_a_policys_own_parameters_and_checks_them():
    (config,) = grid(["mythex"], [1_000], {"mythex": {"keep_results": "6"}})
    assert config.params == (("keep_results", "6"),)
    assert config.make_params().keep_results == 6
    assert config.label == "mythex @ 1,000, keep_results=6"
    with pytest.raises(SweepError, match="mythex: keep_results: expected int, got 'six'"):
        grid(["mythex"], [1_000], {"mythex": {"keep_results": "six"}})


@pytest.mark.parametrize(
    ("policies", "budgets", "message"),
    [
        ([], [1], "policies: choose at least one policy"),
        (["mythex"], [], "budgets: give at least one budget"),
        (["nope"], [1], "policies: unknown nope; expected one of as_logged, none, turns"),
        (["mythex"], [0], "budgets: expected between 1 and 100,000,000 tokens, got 0"),
        (["mythex"], [10**9], "got 1,000,000,000"),
    ],
)
def test_grid_rejects_bad_input_naming_it(policies, budgets, message):
    with pytest.raises(SweepError, match=message):
        grid(policies, budgets)


def test_grid_is_capped():
    budgets = list(range(1, MAX_CONFIGS + 2))
    with pytest.raises(SweepError, match=f"1 policies x {MAX_CONFIGS + 1} budgets"):
        grid(["none"], budgets)


@pytest.mark.parametrize(
    ("text", "budgets"),
    [
        ("100000 200000", (100_000, 200_000)),
        ("100000,200000", (100_000, 200_000)),
        ("100,000, 400,000", (100_000, 400_000)),
        ("100_000;250000", (100_000, 250_000)),
        ("", ()),
    ],
)
def test_budgets_are_read_from_text(text, budgets):
    assert parse_budgets(text) == budgets


def test_a_bad_budget_is_named():
    with pytest.raises(SweepError, match="budgets: expected whole numbers of tokens, got '2k'"):
        parse_budgets("100000 2k")


def test_config_round_trips_through_a_dict():
    config = Config("mythex", 5_000, (("keep_results", "6"),))
    assert Config.from_dict(config.to_dict()) == config


def _cell(run, policy, budget, hard_limit=1_000_000):
    sim = simulate(
        build(run, CHARS4),
        POLICIES[policy],
        budget=budget,
        hard_limit=hard_limit,
        count=CHARS4.count,
    )
    return sim, outcome(sim, detect(sim))


@settings(max_examples=40, deadline=None)
@given(histories(), st.integers(2_000, 500_000))
def test_an_outcome_agrees_with_its_simulation(run, budget):
    sim, cell = _cell(run, "mythex", budget, hard_limit=600_000)
    assert cell.steps == len(sim.records)
    assert cell.completed == sim.completed
    assert cell.rejected_steps == sum(r.rejected for r in sim.records)
    assert cell.peak_sent == max((r.sent for r in sim.records), default=0)
    assert (cell.first_rejected is None) == cell.completed
    if cell.first_rejected is not None:
        assert sim.records[cell.first_rejected].rejected
        assert not any(r.rejected for r in sim.records[: cell.first_rejected])
    assert Outcome.from_dict(cell.to_dict()) == cell


@settings(max_examples=25, deadline=None)
@given(st.lists(histories(max_rounds=12), min_size=1, max_size=5), st.integers(5_000, 300_000))
def test_totals_add_up_the_cells_in_any_order(runs, budget):
    cells = [_cell(run, "turns", budget, hard_limit=300_000)[1] for run in runs]
    forward, backward = totals(cells), totals(reversed(cells))
    assert forward == backward
    assert forward.runs == len(runs)
    assert forward.completed_runs + forward.rejected_runs == forward.runs
    assert forward.total_sent == sum(c.total_sent for c in cells)
    assert forward.peak_sent == max(c.peak_sent for c in cells)
    assert 0 <= forward.cached_tokens <= forward.total_sent


def test_totals_of_no_cells_are_zero():
    empty = totals([])
    assert (empty.runs, empty.peak_sent, empty.cost, empty.cached_tokens) == (0, 0, 0.0, 0)


def test_policy_settings_are_read_by_policy_from_lines():
    lines = ["mythex.keep_results = 6", "", "deepagents.keep_messages=10"]
    assert parse_settings(lines) == {
        "mythex": {"keep_results": "6"},
        "deepagents": {"keep_messages": "10"},
    }


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("keep_results=6", "line 1: expected policy.parameter=value, got 'keep_results=6'"),
        ("mythex.keep_results", "line 1: expected policy.parameter=value"),
        ("magic.x=1", "line 1: unknown policy 'magic'; expected one of as_logged, none, turns"),
    ],
)
def test_a_bad_settings_line_is_named(line, message):
    with pytest.raises(SweepError, match=message):
        parse_settings([line])
