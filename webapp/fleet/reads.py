"""A collection analysed as a fleet: every run of it simulated under one view state
(policy, budget, estimator, ...), a row of figures per run, and the totals."""

from __future__ import annotations

from dataclasses import dataclass, replace

from contextsim.analysis.sweep import Config, Outcome, Totals, outcome, totals
from contextsim.counting.estimators import Estimator
from webapp.dashboard.analysis import Analysis, analyse
from webapp.dashboard.state import ViewState
from webapp.models import Run


@dataclass(frozen=True, slots=True)
class FleetRow:
    run: Run
    outcome: Outcome
    other: Outcome | None
    analysis: Analysis


@dataclass(frozen=True, slots=True)
class Fleet:
    rows: list[FleetRow]
    totals: Totals
    other_totals: Totals | None


def analyse_fleet(
    runs: list[Run], state: ViewState, estimators: dict[str, Estimator] | None = None
) -> Fleet:
    """Simulate the state (and its compared policy) on every run."""
    rows = []
    for run in runs:
        result = analyse(run, state, estimators, baseline=False)
        other = outcome(result.other, []) if result.other is not None else None
        rows.append(FleetRow(run, outcome(result.main, result.problems), other, result))
    others = [r.other for r in rows if r.other is not None]
    return Fleet(rows, totals(r.outcome for r in rows), totals(others) if others else None)


FRONTIER_FACTORS = (0.25, 0.5, 1.0, 1.5, 2.0)
"""The budgets of a collection's frontier, as multiples of the state's budget."""


def frontier(
    runs: list[Run], state: ViewState, estimators: dict[str, Estimator] | None = None
) -> tuple[list[Config], list[Totals]]:
    """The fleet's totals for the state's policy (and the compared one, with its own
    parameters) at budgets around the state's (FRONTIER_FACTORS, at least 1,000 tokens,
    at most the hard limit): the points of the collection's frontier."""
    budgets = sorted(
        {min(max(round(state.budget * f), 1_000), state.hard_limit) for f in FRONTIER_FACTORS}
    )
    chosen = [(state.policy, state.params)]
    if state.compare:
        chosen.append((state.compare, state.compare_params))
    configs, found = [], []
    for policy, params in chosen:
        for budget in budgets:
            alone = replace(state, policy=policy, params=params, compare="", budget=budget)
            results = [analyse(run, alone, estimators, alone=True) for run in runs]
            configs.append(Config(policy, budget))
            found.append(totals(outcome(r.main, r.problems) for r in results))
    return configs, found
