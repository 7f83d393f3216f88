"""Where a run's context went: the tokens every request of a simulation sent, summed
over the requests, by kind of message kept and by what a policy put in their place
(cleared notes, summaries, offload stubs, inserted notes), by tool and by MCP server.

A request resends the whole history, so a tool result kept for 40 requests is paid
for 40 times: these sums are what each part cost in input tokens over the run, the
figure that adds up across runs (a peak does not). Units are the provider's tokens when
the simulation reconciles (the estimator's x the fitted scale, the fitted overhead as the
part "unlogged"), else the estimator's. The parts add up to the sum of what was sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contextsim.analysis.tool_usage import DEFINITIONS, ToolShare, by_server
from contextsim.engine.simulate import Simulation
from contextsim.model import KINDS

PLACED = ("cleared", "summary", "offloaded", "notes")
"""What a policy sends in place of messages (Accountant.composition's keys)."""
UNLOGGED = "unlogged"
"""The part of what was sent the log does not hold (the fitted overhead)."""
LAYOUT = 1
"""The version of the stored form (to_dict); a stored form of another is computed again."""


@dataclass(frozen=True, slots=True)
class ContextShares:
    """A run's parts of what it sent over all its requests (tokens x requests).

    `sent` is the sum of what every request sent; `parts` splits it by kind of kept
    message (model.KINDS), PLACED and UNLOGGED (only parts that are not 0; they add up
    to `sent` but for rounding); `tools` and `servers` are the tools' results, calls'
    arguments and definitions (analysis.tool_usage: a part of `parts`' tool kinds),
    by tool and by MCP server. `estimator` counted it; `reconciled` says whether the
    figures are the provider's tokens."""

    requests: int
    sent: int
    parts: Mapping[str, int] = field(default_factory=dict)
    tools: Mapping[str, int] = field(default_factory=dict)
    servers: Mapping[str, int] = field(default_factory=dict)
    estimator: str = ""
    reconciled: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (from_dict reads it back)."""
        return {
            "layout": LAYOUT,
            "requests": self.requests,
            "sent": self.sent,
            "parts": dict(self.parts),
            "tools": dict(self.tools),
            "servers": dict(self.servers),
            "estimator": self.estimator,
            "reconciled": self.reconciled,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextShares | None:
        """The shares of a stored form; None for a form of another LAYOUT."""
        if data.get("layout") != LAYOUT:
            return None
        return cls(
            int(data["requests"]),
            int(data["sent"]),
            {str(k): int(v) for k, v in data["parts"].items()},
            {str(k): int(v) for k, v in data["tools"].items()},
            {str(k): int(v) for k, v in data["servers"].items()},
            str(data.get("estimator", "")),
            bool(data.get("reconciled", False)),
        )


def context_shares(sim: Simulation, tools: list[ToolShare]) -> ContextShares:
    """The shares of `sim` over all its requests; `tools` is its tool breakdown over
    the run (analysis.tool_usage.tool_breakdown, the definitions split between the
    tools when the log holds them: split_definitions). A definitions row the log does
    not split is kept under its own name (DEFINITIONS)."""
    rec = sim.reconciliation
    scale = rec.scale if rec is not None else 1.0
    kept = [0.0] * len(KINDS)
    placed = dict.fromkeys(PLACED, 0.0)
    unlogged = 0
    for step, record in enumerate(sim.records):
        for i, tokens in enumerate(sim.kept_by_kind(step)):
            kept[i] += tokens
        composition = sim.composition(step)
        for key in PLACED:
            placed[key] += composition[key]
        if rec is not None:
            unlogged += max(record.sent - round(scale * record.estimated), 0)
    parts: dict[str, int] = {
        kind: round(scale * tokens) for kind, tokens in zip(KINDS, kept, strict=True)
    }
    parts.update({key: round(scale * tokens) for key, tokens in placed.items()})
    parts[UNLOGGED] = unlogged
    named = {t.name: t.run_tokens for t in tools if t.run_tokens}
    servers = {t.name: t.run_tokens for t in by_server(tools) if t.run_tokens}
    if DEFINITIONS in named:
        servers.pop(DEFINITIONS, None)
    return ContextShares(
        requests=len(sim.records),
        sent=sum(r.sent for r in sim.records),
        parts={k: v for k, v in parts.items() if v},
        tools=named,
        servers=servers,
        estimator=sim.skeleton.estimator,
        reconciled=rec is not None,
    )
