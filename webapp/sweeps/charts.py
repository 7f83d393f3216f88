"""Plotly figures of a sweep: per policy, a line over the budgets for the runs finished,
the largest request and the cost (plain JSON-ready dicts, drawn by plotly.js)."""

from __future__ import annotations

from typing import Any

from contextsim.analysis.sweep import Config, Totals
from webapp.dashboard.charts.axes import axis, legend_below

# Okabe-Ito, in an order that keeps neighbouring policies apart.
POLICY_COLOURS = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#000000",
    "#F0E442",
)
METRICS = {
    "finished": ("Runs finished (no request rejected)", "runs"),
    "peak": ("Largest request", "tokens"),
    "cost": ("Estimated cost of all runs", "$"),
}


def sweep_figures(
    configs: list[Config], totals: list[Totals], hard_limit: int
) -> dict[str, dict[str, Any]]:
    """One figure per metric (keys of METRICS): x is the budget (log scale when the
    budgets span more than a factor of 4), one line per policy, only configurations
    with at least one cell done."""
    series: dict[str, list[tuple[int, Totals]]] = {}
    for config, total in zip(configs, totals, strict=True):
        if total.runs:
            series.setdefault(config.policy, []).append((config.budget, total))
    budgets = [c.budget for c in configs]
    log = bool(budgets) and max(budgets) > 4 * min(budgets)
    figures: dict[str, dict[str, Any]] = {}
    for key, (title, unit) in METRICS.items():
        traces = [
            _line(policy, points, key, POLICY_COLOURS[i % len(POLICY_COLOURS)])
            for i, (policy, points) in enumerate(series.items())
        ]
        figures[key] = {"data": traces, "layout": _layout(title, unit, log, budgets)}
    if series:
        runs = max(t.runs for points in series.values() for _, t in points)
        figures["finished"]["layout"]["yaxis"]["range"] = [-0.3, runs + 0.3]
        figures["peak"]["data"].append(_limit_line(budgets, hard_limit))
    return figures


def _value(total: Totals, key: str) -> float:
    if key == "finished":
        return total.completed_runs
    if key == "peak":
        return total.peak_sent
    return total.cost


def _line(policy: str, points: list[tuple[int, Totals]], key: str, colour: str) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": policy,
        "x": [b for b, _ in points],
        "y": [_value(t, key) for _, t in points],
        "customdata": [[t.runs, t.rejected_runs, t.over_budget_runs] for _, t in points],
        "hovertemplate": f"{policy}<br>budget %{{x:,}}<br>%{{y:,}}"
        "<br>%{customdata[1]} of %{customdata[0]} runs rejected"
        "<br>%{customdata[2]} over budget<extra></extra>",
        "line": {"color": colour, "width": 2},
        "marker": {"size": 7},
    }


def _limit_line(budgets: list[int], hard_limit: int) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": "hard limit",
        "x": [min(budgets), max(budgets)],
        "y": [hard_limit, hard_limit],
        "line": {"color": "#000", "dash": "dot", "width": 1},
        "hoverinfo": "skip",
    }


def _short(tokens: int) -> str:
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if tokens >= size and tokens % (size // 10) == 0:
            return f"{tokens / size:g}{suffix}"
    return f"{tokens:,}"


def _layout(title: str, unit: str, log: bool, budgets: list[int]) -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 14}},
        "height": 300,
        "margin": {"l": 60, "r": 10, "t": 40, "b": 70},
        "xaxis": {
            **axis("budget (tokens per request)"),
            "type": "log" if log else "linear",
            # Ticks at the swept budgets only: log axes otherwise label 2, 3, ... 9.
            "tickvals": sorted(set(budgets)),
            "ticktext": [_short(b) for b in sorted(set(budgets))],
        },
        "yaxis": axis(unit, rangemode="tozero"),
        "legend": legend_below(),
        "hovermode": "closest",
        "paper_bgcolor": "rgba(0,0,0,0)",
    }
