"""The frontier of a fleet: per policy, what it costs (and the largest request it
sends) for the runs it finishes, one point per budget, so the best policy is the one
whose points sit furthest right and lowest. Plain JSON-ready plotly figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextsim.analysis.sweep import Config, Totals
from webapp.dashboard.charts.axes import axis, legend_below
from webapp.sweeps.charts import POLICY_COLOURS

FRONTIERS = {
    "cost": ("Cost against runs finished", "estimated cost of all runs ($)"),
    "peak": ("Largest request against runs finished", "largest request (tokens)"),
}


def frontier_figures(
    configs: Sequence[Config], totals: Sequence[Totals], runs: int
) -> dict[str, dict[str, Any]]:
    """One figure per key of FRONTIERS: x the runs finished (of `runs`), y the cost or
    the largest request, a line per policy (and parameters) through its budgets in
    order, each point labelled with its budget. Configurations with no cell done are
    left out."""
    series: dict[str, list[tuple[Config, Totals]]] = {}
    for config, total in zip(configs, totals, strict=True):
        if total.runs:
            series.setdefault(_name(config), []).append((config, total))
    figures = {}
    for key, (title, unit) in FRONTIERS.items():
        traces = [
            _trace(name, sorted(points, key=lambda p: p[0].budget), key, i)
            for i, (name, points) in enumerate(series.items())
        ]
        figures[key] = {"data": traces, "layout": _layout(title, unit, runs)}
    return figures


def _name(config: Config) -> str:
    deferring = f" defer={config.defer}" if config.defer else ""
    return config.policy + "".join(f" {k}={v}" for k, v in config.params) + deferring


def _trace(name: str, points: list[tuple[Config, Totals]], key: str, i: int) -> dict[str, Any]:
    colour = POLICY_COLOURS[i % len(POLICY_COLOURS)]
    values = [t.cost if key == "cost" else t.peak_sent for _, t in points]
    return {
        "type": "scatter",
        "mode": "lines+markers+text",
        "name": name,
        "x": [t.completed_runs for _, t in points],
        "y": values,
        "text": _labels(points, values),
        "textposition": "top center" if i % 2 == 0 else "bottom center",
        "textfont": {"size": 10, "color": colour},
        "customdata": [[c.budget, t.runs] for c, t in points],
        "hovertemplate": f"{name}<br>budget %{{customdata[0]:,}}<br>%{{x}} of "
        "%{customdata[1]} runs finished<br>%{y:,}<extra></extra>",
        "line": {"color": colour, "width": 1.5},
        "marker": {"size": 8, "color": colour},
    }


def _labels(points: list[tuple[Config, Totals]], values: list[float | int]) -> list[str]:
    """Each point's budget label, but one label for points drawn at one place (the same
    runs finished and a value within 3% of the series' range: they would print over
    each other): "100k-400k" on the last of them, the others blank."""
    top = max(values, default=0) - min(values, default=0) or 1
    labels = [""] * len(points)
    start = 0
    for n in range(1, len(points) + 1):
        same = (
            n < len(points)
            and points[n][1].completed_runs == points[start][1].completed_runs
            and abs(values[n] - values[start]) <= 0.03 * top
        )
        if same:
            continue
        first, last = _short(points[start][0].budget), _short(points[n - 1][0].budget)
        labels[n - 1] = first if first == last else f"{first}-{last}"
        start = n
    return labels


def _short(tokens: int) -> str:
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if tokens >= size:
            return f"{tokens / size:.3g}{suffix}"
    return f"{tokens:,}"


def _layout(title: str, unit: str, runs: int) -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 14}},
        "height": 320,
        "margin": {"l": 60, "r": 10, "t": 40, "b": 70},
        "xaxis": {
            **axis("runs finished (no request rejected)"),
            "range": [-0.5, runs + 0.5],
            "dtick": max(1, runs // 10),
        },
        "yaxis": axis(unit, rangemode="tozero"),
        "legend": legend_below(),
        "hovermode": "closest",
        "paper_bgcolor": "rgba(0,0,0,0)",
    }
