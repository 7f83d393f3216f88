"""The ledger chart: every tool result's disposition at every step, as a heatmap."""

from __future__ import annotations

from typing import Any

from contextsim.engine.simulate import Simulation
from webapp.dashboard.charts.composition import plain

LEDGER_ROWS = 150
LEDGER_COLUMNS = 300
LEDGER_CODES = {"k": 1, "c": 2, "t": 3, "s": 4, "o": 5}
LEDGER_NAMES = ["not yet", "kept", "cleared", "truncated", "summarized", "offloaded"]
LEDGER_COLOURS = ["#ffffff", "#56B4E9", "#E69F00", "#999999", "#CC79A7", "#F0E442"]


def _spread(n: int, most: int) -> list[int]:
    if n <= most:
        return list(range(n))
    return sorted({round(i * (n - 1) / (most - 1)) for i in range(most)})


def ledger_figure(sim: Simulation) -> dict[str, Any]:
    """Tool results x steps, coloured by each result's disposition at each step. Large
    runs show evenly spread rows and columns (at most LEDGER_ROWS x LEDGER_COLUMNS)."""
    sk, acct = sim.skeleton, sim.accountant
    results = [i for i, n in enumerate(sk.result_count) if n]
    rows = [results[j] for j in _spread(len(results), LEDGER_ROWS)]
    steps = _spread(len(sim.records), LEDGER_COLUMNS)
    z = [
        [
            LEDGER_CODES[acct.disposition(sim.records[k].plan, i)] if i < sim.records[k].end else 0
            for k in steps
        ]
        for i in rows
    ]
    scale = []
    for code, colour in enumerate(LEDGER_COLOURS):
        scale += [[code / 6, colour], [(code + 1) / 6, colour]]
    labels = [plain(f"#{i} {sk.tool_names[i] or 'result'} ({sk.tokens[i]:,} tokens)") for i in rows]
    return {
        "data": [
            {
                "type": "heatmap",
                "z": z,
                "x": steps,
                "y": labels,
                "zmin": 0,
                "zmax": 6,
                "colorscale": scale,
                "showscale": False,
                "xgap": 0,
                "ygap": 0,
                "customdata": [[LEDGER_NAMES[v] for v in row] for row in z],
                "hovertemplate": "step %{x}<br>%{y}<br>%{customdata}<extra></extra>",
            }
        ],
        "layout": {
            "margin": {"l": 10, "r": 10, "t": 10, "b": 40},
            "xaxis": {"title": {"text": "request (step)"}},
            "yaxis": {
                "showticklabels": False,
                "autorange": "reversed",
                "title": {"text": "tool results, oldest first"},
            },
            "height": max(220, min(12 * len(rows), 600)),
        },
    }
