"""The estimates chart: each estimator's count of every request beside its measured
usage, against the budget."""

from __future__ import annotations

from typing import Any

from webapp.dashboard.charts.axes import axis, legend_below
from webapp.dashboard.charts.composition import line


def estimates_figure(rows: list[Any], budget: int) -> dict[str, Any]:
    """Per request: every estimator's count of the history beside the measured usage,
    with the budget line (rows from webapp.estimators.reads.request_rows)."""
    steps = [r.step for r in rows]
    traces = []
    palette = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#999999"]
    names = list(rows[0].estimates) if rows else []
    for colour, name in zip(palette, names, strict=False):
        traces.append(line(name, steps, [r.estimates[name] for r in rows], colour, "solid"))
    if any(r.measured is not None for r in rows):
        traces.append(line("measured", steps, [r.measured for r in rows], "#000000", "dot"))
    hline = {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": budget,
        "y1": budget,
        "line": {"color": "#0072B2", "dash": "dash"},
    }
    return {
        "data": traces,
        "layout": {
            "margin": {"l": 60, "r": 20, "t": 20, "b": 40},
            "hovermode": "x unified",
            "legend": legend_below(),
            "xaxis": axis("request (step)"),
            "yaxis": axis("tokens", rangemode="tozero", tickformat=",d"),
            "shapes": [hline],
        },
    }
