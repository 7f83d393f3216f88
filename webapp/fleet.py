"""A collection analysed as a fleet: every run of it simulated under one view state
(policy, budget, estimator, ...), a row of figures per run, the totals, and one chart
of what each run sends at each step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contextsim.estimators import Estimator
from contextsim.sweep import Outcome, Totals, outcome, totals
from webapp.analysis import Analysis, ViewState, analyse
from webapp.charts import limit_lines, plain, sampled_steps
from webapp.models import Run
from webapp.sweep_charts import POLICY_COLOURS


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


def fleet_figure(fleet: Fleet, state: ViewState) -> dict[str, Any]:
    """One line per run: tokens sent at each step (the largest of each bucket when a
    run has many steps), with the budget and the hard limit; rejected steps marked."""
    traces = []
    for i, row in enumerate(fleet.rows):
        sim = row.analysis.main
        steps = sampled_steps(sim, row.analysis.problems)
        colour = POLICY_COLOURS[i % len(POLICY_COLOURS)]
        name = plain(row.run.title[:40])
        traces.append(_line(name, steps, [sim.records[k].sent for k in steps], colour, "solid"))
        other = row.analysis.other
        if other is not None:
            ys = [other.records[k].sent for k in steps]
            traces.append(_line(name, steps, ys, colour, "dot", other.policy))
        rejected = [k for k in steps if sim.records[k].rejected]
        if rejected:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": plain(f"rejected ({row.run.title[:20]})"),
                    "legendgroup": name,
                    "showlegend": False,
                    "x": rejected,
                    "y": [sim.records[k].sent for k in rejected],
                    "marker": {"symbol": "x", "size": 8, "color": colour},
                    "hovertemplate": "step %{x}: rejected at %{y:,} tokens<extra></extra>",
                }
            )
    return {
        "data": traces,
        "layout": {
            "height": 420,
            "margin": {"l": 60, "r": 20, "t": 20, "b": 40},
            "hovermode": "closest",
            "legend": {"orientation": "h", "y": -0.15},
            "xaxis": {"title": {"text": "request (step)"}, "rangemode": "tozero"},
            "yaxis": {"title": {"text": "tokens sent"}, "rangemode": "tozero", "tickformat": ",d"},
            "paper_bgcolor": "rgba(0,0,0,0)",
            **limit_lines(state.budget, state.hard_limit),
        },
    }


def _line(
    name: str, x: list[int], y: list[int], colour: str, dash: str, compared: str = ""
) -> dict[str, Any]:
    """A run's line; the compared policy's is dotted, in the run's colour, and shown or
    hidden with it from the legend."""
    label = f"{name} ({compared})" if compared else name
    return {
        "type": "scatter",
        "mode": "lines",
        "name": label,
        "legendgroup": name,
        "showlegend": not compared,
        "x": x,
        "y": y,
        "line": {"color": colour, "width": 1.5 if not compared else 1.2, "dash": dash},
        "hovertemplate": "step %{x}: %{y:,} tokens<extra>%{fullData.name}</extra>",
    }
