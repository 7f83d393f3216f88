"""A step-indexed figure drawn against time: each point at the time its request's
response began (as the log gives it), its step kept as the point's customdata (for
hovers and clicks). Steps the log gives no time are left out."""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from webapp.dashboard.charts.axes import axis


def by_time(figure: dict[str, Any], times: list[str | None]) -> dict[str, Any]:
    """`figure` with every trace's x (step numbers) replaced by `times[step]` (ISO 8601
    text, or None for a step without a time) and a date x axis."""
    out = deepcopy(figure)
    for trace in out["data"]:
        steps = trace.get("x")
        if not isinstance(steps, list):
            continue
        keep = [i for i, s in enumerate(steps) if isinstance(s, int) and 0 <= s < len(times)]
        keep = [i for i in keep if times[steps[i]] is not None]
        for key in ("y", "text", "hovertext"):
            if isinstance(trace.get(key), list) and len(trace[key]) == len(steps):
                trace[key] = [trace[key][i] for i in keep]
        trace["customdata"] = [steps[i] for i in keep]
        trace["x"] = [times[steps[i]] for i in keep]
        template = trace.get("hovertemplate")
        if isinstance(template, str):
            trace["hovertemplate"] = template.replace("step %{x}", "step %{customdata}<br>%{x}")
    layout = out["layout"]
    layout["xaxis"] = axis("time (UTC)", type="date")
    return out
