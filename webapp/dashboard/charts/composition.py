"""The composition chart of a run: what each request sends, by kind and by disposition,
against the budget and the hard limit, with problems marked (a plain JSON-ready dict,
drawn in the browser by plotly.js); and the pieces the other charts share.

Large runs are bucketed: with more steps than MAX_POINTS, each point is the largest
request of its bucket (peaks are never hidden) and carries its real step number, so a
click still opens that step.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from contextsim.analysis.compactions import CompactionEvent
from contextsim.analysis.problems import Problem
from contextsim.engine.columns import columns
from contextsim.engine.simulate import Simulation
from contextsim.model import KINDS
from webapp.dashboard.charts.axes import axis, legend_below

MAX_POINTS = 600
MAX_MARKED = 200
"""Problem steps marked exactly (the most severe); the others are counted per bucket."""
DETAIL_CHARS = 200
"""Characters of a problem's detail in its marker's hover text (the table has it all)."""

# Each layer at least 3:1 against the white plot (WCAG 1.4.11, non-text contrast), hues
# kept apart for the common forms of colour blindness (after Okabe-Ito, darkened).
KIND_COLOURS = {
    "tools": "#555555",
    "system": "#000000",
    "user": "#2C7FB8",
    "assistant": "#008060",
    "tool_call": "#6A3D9A",
    "tool_result": "#767676",
    "thinking": "#5E8C31",
    "attachment": "#A0522D",
}
DISPOSITION_COLOURS = {
    "cleared": "#B07800",
    "summary": "#B0407F",
    "offloaded": "#8C7A00",
    "notes": "#C2410C",
}
SHOWN_KINDS = (
    "tools",
    "system",
    "attachment",
    "user",
    "assistant",
    "thinking",
    "tool_call",
    "tool_result",
)
UNLOGGED_COLOUR = "#949494"
MEASURED_COLOUR = "#000000"
PLOT_BACKGROUND = "#FFFFFF"


def plain(text: str) -> str:
    """Text from a log, for a figure: plotly.js applies some HTML tags in names, labels
    and hover texts (links, styles), so they are escaped to be shown, not applied."""
    return html.escape(text, quote=False)


def sampled_steps(sim: Simulation, problems: list[Problem]) -> list[int]:
    """Every step, or the largest request of each bucket plus every problem step."""
    n = len(sim.records)
    if n <= MAX_POINTS:
        return list(range(n))
    size = -(-n // MAX_POINTS)
    chosen = set(columns(sim).bucket_peaks(size))
    # The steps marked exactly are drawn exactly (the markers sit on them).
    chosen |= set(list(_marked(problems))[:MAX_MARKED])
    return sorted(chosen)


SEVERITY = {"error": 0, "warning": 1, "info": 2}


def _marked(problems: list[Problem]) -> dict[int, Problem]:
    """Each problem step's most severe problem, most severe first (a compaction is
    marked as one, not as a problem)."""
    first: dict[int, Problem] = {}
    shown = (p for p in problems if p.kind != "compacted")
    for p in sorted(shown, key=lambda p: (SEVERITY.get(p.severity, 3), p.step)):
        first.setdefault(p.step, p)
    return first


def composition_figure(
    sim: Simulation,
    problems: list[Problem],
    other: Simulation | None = None,
    events: Sequence[CompactionEvent] = (),
    title: str = "",
) -> dict[str, Any]:
    """Per step: stacked sent tokens (kept by kind, then cleared notes, summaries,
    offload stubs, inserted notes); lines for the full history, measured usage and a
    compared policy; the budget and hard limit; markers on problem steps and on the
    compactions (`events`, each with its own hover text). `title` names the figure
    when it is saved as an image (run, policy, estimator)."""
    steps = sampled_steps(sim, problems)
    records = [sim.records[k] for k in steps]
    kept = [sim.kept_by_kind(k) for k in steps]
    parts = [sim.composition(k) for k in steps]
    rec = sim.reconciliation
    # Reconciled, every layer is in the provider's tokens (x scale) and what the log does
    # not hold is a layer of its own, so the stack adds up to what is sent.
    scale = rec.scale if rec is not None else 1.0
    traces: list[dict[str, Any]] = []
    if rec is not None:
        ys = [max(r.sent - round(scale * r.estimated), 0) for r in records]
        if any(ys):
            traces.append(_area("unlogged (fitted overhead)", steps, ys, UNLOGGED_COLOUR))
    for kind in SHOWN_KINDS:
        i = KINDS.index(kind)
        ys = [round(scale * row[i]) for row in kept]
        if any(ys):
            traces.append(_area(f"kept: {kind.replace('_', ' ')}", steps, ys, KIND_COLOURS[kind]))
    for key, colour in DISPOSITION_COLOURS.items():
        ys = [round(scale * p[key]) for p in parts]
        if any(ys):
            label = {"cleared": "cleared (notes)", "offloaded": "offloaded (stubs)"}.get(key, key)
            traces.append(_area(label, steps, ys, colour))
    full = [rec.tokens(r.full) if rec is not None else r.full for r in records]
    traces.append(line("full history (none)", steps, full, "#444444", "dot"))
    if any(r.measured is not None for r in records):
        traces.append(
            line("measured", steps, [r.measured for r in records], MEASURED_COLOUR, "solid")
        )
    if other is not None:
        ys = [other.records[k].sent for k in steps]
        traces.append(line(f"sent by {other.policy}", steps, ys, "#E7298A", "dash"))
    traces.append(_markers(sim, problems))
    if events:
        traces.append(_compactions(sim, events))
    top = max((y or 0 for t in traces for y in t["y"]), default=0)
    layout = _layout(sim, top)
    layout["meta"] = {"title": plain(title)}
    if len(steps) == 1:
        # One request draws no line and no area: show its values as points, centred.
        for trace in traces:
            trace["mode"] = "markers"
            point = (
                trace.get("fillcolor") or trace["line"].get("color") if "line" in trace else None
            )
            trace.setdefault("marker", {"size": 10, "color": point})
        layout["xaxis"]["range"] = [-0.5, 0.5]
    if len(sim.records) <= 10:
        layout["xaxis"]["dtick"] = 1  # whole steps, not 0.2, 0.4, ...
    return {"data": traces, "layout": layout}


def _area(name: str, x: list[int], y: list[int], colour: str) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": x,
        "y": y,
        "stackgroup": "sent",
        "line": {"width": 0, "color": colour},
        "fillcolor": colour,
        "hovertemplate": "%{y:,} tokens<extra>" + name + "</extra>",
    }


def line(
    name: str, x: list[int], y: Sequence[int | None], colour: str, dash: str
) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": x,
        "y": y,
        "line": {"color": colour, "width": 1.5, "dash": dash},
        "hovertemplate": "%{y:,} tokens<extra>" + name + "</extra>",
    }


def _markers(sim: Simulation, problems: list[Problem]) -> dict[str, Any]:
    """A marker on each problem step, the MAX_MARKED most severe exactly; past those,
    one marker per bucket of steps saying how many more it holds (all are in the
    problems list), so the figure stays bounded however many problems a run has."""
    first = _marked(problems)
    # A short run's chart has every step: each problem step is marked as it is.
    cut = MAX_MARKED if len(sim.records) > MAX_POINTS else len(first)
    exact = list(first)[:cut]
    texts = {k: _wrapped(_problem_text(first[k])) for k in exact}
    size = -(-len(sim.records) // MAX_POINTS)
    rest: dict[int, list[int]] = {}
    for k in list(first)[cut:]:
        rest.setdefault(k // size, []).append(k)
    peaks = columns(sim).bucket_peaks(size) if rest else []
    for bucket, ks in rest.items():
        k = peaks[bucket]  # the step the chart draws for the bucket
        said = (
            f"{len(ks)} more problem step{'s' if len(ks) > 1 else ''} in steps {min(ks)}-{max(ks)}"
        )
        texts[k] = f"{texts[k]}<br>{said}" if k in texts else said
    xs = sorted(texts)
    return {
        "type": "scatter",
        "mode": "markers",
        "name": "problems",
        "x": xs,
        "y": [sim.records[k].sent for k in xs],
        "text": [texts[k] for k in xs],
        "marker": {"symbol": "x", "size": 9, "color": "#D55E00"},
        "hovertemplate": "%{text}<extra>problem</extra>",
    }


def _problem_text(p: Problem) -> str:
    cost = f" (${p.dollars:,.2f})" if p.dollars else ""
    return f"{p.kind}{cost}: {p.detail[:DETAIL_CHARS]}"


def _compactions(sim: Simulation, events: Sequence[CompactionEvent]) -> dict[str, Any]:
    """A marker on the first request after each compaction, its hover text saying what
    set it off, the sizes before and after, the threshold and the window."""
    records = sim.records
    steps = [e.step for e in events]
    return {
        "type": "scatter",
        "mode": "markers",
        "name": "compaction",
        "x": steps,
        "y": [records[k].measured or records[k].sent for k in steps],
        "text": [_wrapped(e.explain()) for e in events],
        "marker": {"symbol": "diamond", "size": 12, "color": "#B0407F", "line": {"width": 1}},
        "hovertemplate": "%{text}<extra>compaction</extra>",
    }


def _wrapped(text: str, width: int = 70) -> str:
    """Text from a log, escaped (plain) and broken into lines of about `width`
    characters (a hover box is one line per <br>), so a long one stays on screen."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "<br>".join(plain(part) for part in [*lines, line])


def _layout(sim: Simulation, top: int) -> dict[str, Any]:
    """Axes, and the budget and hard limit as lines. A limit far above every request
    would squash the run into the floor: the axis then fits the data and says where the
    limits are instead."""
    if top and sim.budget > 3 * top:
        return {
            "margin": {"l": 60, "r": 20, "t": 30, "b": 40},
            "plot_bgcolor": PLOT_BACKGROUND,
            "paper_bgcolor": PLOT_BACKGROUND,
            "hovermode": "x unified",
            "legend": legend_below(),
            "xaxis": axis("request (step)", rangemode="tozero"),
            "yaxis": axis("tokens", range=[0, top * 1.15], tickformat=",d"),
            "annotations": [
                {
                    "xref": "paper",
                    "yref": "paper",
                    "x": 1,
                    "y": 1,
                    "showarrow": False,
                    "xanchor": "right",
                    "yanchor": "bottom",
                    "text": f"budget {sim.budget:,} and hard limit {sim.hard_limit:,}: far above",
                }
            ],
        }
    return {
        "margin": {"l": 60, "r": 20, "t": 30, "b": 40},
        "plot_bgcolor": PLOT_BACKGROUND,
        "paper_bgcolor": PLOT_BACKGROUND,
        "hovermode": "x unified",
        "legend": legend_below(),
        "xaxis": axis("request (step)", rangemode="tozero"),
        "yaxis": axis("tokens", rangemode="tozero", tickformat=",d"),
        **limit_lines(sim.budget, sim.hard_limit),
    }


def limit_lines(budget: int, hard_limit: int) -> dict[str, list[dict[str, Any]]]:
    """Layout shapes and labels for the budget and the hard limit (tokens)."""
    hline = {"type": "line", "xref": "paper", "x0": 0, "x1": 1}
    label = {"xref": "paper", "x": 1, "showarrow": False, "xanchor": "right", "yanchor": "bottom"}
    return {
        "shapes": [
            {**hline, "y0": budget, "y1": budget, "line": {"color": "#0072B2", "dash": "dash"}},
            {**hline, "y0": hard_limit, "y1": hard_limit, "line": {"color": "#D55E00"}},
        ],
        "annotations": [
            {**label, "y": budget, "text": f"budget {budget:,}"},
            {**label, "y": hard_limit, "text": f"hard limit {hard_limit:,}"},
        ]
        if budget != hard_limit
        else [{**label, "y": budget, "text": f"budget = hard limit {budget:,}"}],
    }
