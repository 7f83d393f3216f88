"""The fleet chart of a collection: one line per run of what it sends at each step (the
compared policy dotted), rejected steps marked, against the budget and the hard limit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from webapp.dashboard.charts.axes import axis, legend_below
from webapp.dashboard.charts.composition import limit_lines, plain, sampled_steps
from webapp.sweeps.charts import POLICY_COLOURS

if TYPE_CHECKING:
    from webapp.dashboard.state import ViewState
    from webapp.fleet.reads import Fleet


def fleet_figure(
    fleet: Fleet, state: ViewState, starts: dict[int, int] | None = None
) -> dict[str, Any]:
    """One line per run: tokens sent at each step (the largest of each bucket when a
    run has many steps), with the budget and the hard limit; rejected steps marked.
    The x axis is the session's main run's steps: a subagent's line begins at the step
    that started it (`starts`, by run pk: sessions.start_steps), its own step in the
    hover."""
    starts = starts or {}
    traces = []
    for i, row in enumerate(fleet.rows):
        sim = row.analysis.main
        steps = sampled_steps(sim, row.analysis.problems)
        start = starts.get(row.run.pk, 0)
        colour = POLICY_COLOURS[i % len(POLICY_COLOURS)]
        name = plain(row.run.title[:40])
        ys = [sim.records[k].sent for k in steps]
        traces.append(_run_line(name, steps, ys, colour, "solid", start=start))
        other = row.analysis.other
        if other is not None:
            ys = [other.records[k].sent for k in steps]
            traces.append(_run_line(name, steps, ys, colour, "dot", other.policy, start))
        rejected = [k for k in steps if sim.records[k].rejected]
        if rejected:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": plain(f"rejected ({row.run.title[:20]})"),
                    "legendgroup": name,
                    "showlegend": False,
                    "x": [k + start for k in rejected],
                    "customdata": rejected,
                    "y": [sim.records[k].sent for k in rejected],
                    "marker": {"symbol": "x", "size": 8, "color": colour},
                    "hovertemplate": (
                        "its step %{customdata}: rejected at %{y:,} tokens<extra></extra>"
                    ),
                }
            )
    return {
        "data": traces,
        "layout": {
            "height": 420,
            "margin": {"l": 60, "r": 20, "t": 20, "b": 40},
            "hovermode": "closest",
            "legend": legend_below(),
            "xaxis": axis("request (step of the session's main run)", rangemode="tozero"),
            "yaxis": axis("tokens sent", rangemode="tozero", tickformat=",d"),
            "paper_bgcolor": "rgba(0,0,0,0)",
            **limit_lines(state.budget, state.hard_limit),
        },
    }


def _run_line(
    name: str,
    x: list[int],
    y: list[int],
    colour: str,
    dash: str,
    compared: str = "",
    start: int = 0,
) -> dict[str, Any]:
    """A run's line from step `start` of its session; the compared policy's is dotted,
    in the run's colour, and shown or hidden with it from the legend."""
    label = f"{name} ({compared})" if compared else name
    return {
        "type": "scatter",
        "mode": "lines",
        "name": label,
        "legendgroup": name,
        "showlegend": not compared,
        "x": [k + start for k in x],
        "customdata": x,
        "y": y,
        "line": {"color": colour, "width": 1.5 if not compared else 1.2, "dash": dash},
        "hovertemplate": "its step %{customdata}: %{y:,} tokens<extra>%{fullData.name}</extra>",
    }
