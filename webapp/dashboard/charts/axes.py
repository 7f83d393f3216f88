"""What every chart's frame shares: axis titles that never sit on their tick labels and
a legend below the plot that never sits on the x axis title.

The legend is placed in the figure's container, not on the plot (`yref: container`), so
plotly.js makes room for it under the axis title however many rows it wraps to on a
narrow screen; a legend placed on the plot (a negative `y`) is drawn where the title is.
"""

from __future__ import annotations

from typing import Any

LEGEND_BELOW: dict[str, Any] = {
    "orientation": "h",
    "yref": "container",
    "y": 0,
    "yanchor": "bottom",
    "x": 0,
    "xanchor": "left",
}


def axis(title: str, **extra: Any) -> dict[str, Any]:
    """An axis titled `title`, its margin grown to fit the tick labels and the title."""
    return {"title": {"text": title, "standoff": 8}, "automargin": True, **extra}


def legend_below() -> dict[str, Any]:
    return dict(LEGEND_BELOW)
