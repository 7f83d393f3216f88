"""A collection analysed as a fleet: every run of it simulated under one view state
(policy, budget, estimator, ...), a row of figures per run, and the totals."""

from __future__ import annotations

from dataclasses import dataclass

from contextsim.estimators import Estimator
from contextsim.sweep import Outcome, Totals, outcome, totals
from webapp.models import Run
from webapp.selectors.analysis import Analysis, analyse
from webapp.viewstate import ViewState


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
        result = analyse(run, state, estimators)
        other = outcome(result.other, []) if result.other is not None else None
        rows.append(FleetRow(run, outcome(result.main, result.problems), other, result))
    others = [r.other for r in rows if r.other is not None]
    return Fleet(rows, totals(r.outcome for r in rows), totals(others) if others else None)
