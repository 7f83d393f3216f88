"""Reads for the tool-search what-if of the dashboard: the query that defers one more
tool (or an MCP server's tools), and what the state's deferral saves against the same
policy with every definition sent (contextsim.engine.deferral)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from contextsim.analysis.tool_usage import BUILT_IN, ToolShare
from contextsim.engine.deferral import (
    SEARCH_TOOL,
    deferred_names,
    defined_tools,
    loads,
    removed_names,
)
from contextsim.engine.simulate import REPLAY
from contextsim.registry import POLICIES
from webapp.dashboard.analysis import Analysis
from webapp.dashboard.state import ViewState


@dataclass(frozen=True, slots=True)
class Saving:
    """What deferring `tools` (by `patterns`) changes over the run under `policy`:
    `definitions` tokens of theirs left out of each request's tool list, `search`
    tokens of the tool search tool added to it, `loads` definitions loaded again
    where a deferred tool is called, and the `tokens` (provider's count where
    reconciled) and `dollars` fewer over the run (negative: more)."""

    patterns: tuple[str, ...]
    tools: tuple[str, ...]
    policy: str
    definitions: int
    search: int
    loads: int
    tokens: int
    dollars: float
    removed: tuple[str, ...] = ()
    """The tools removed (never called: not offered at all), by name."""
    removed_definitions: int = 0
    """Their definitions' tokens, out of each request's tool list."""


def saving(result: Analysis) -> Saving | None:
    """The state's deferral and what it saves; None when the state defers nothing
    (or the page simulated its policy alone)."""
    deferral = result.state.deferral
    if deferral is None or result.undeferred is None:
        return None
    before = result.undeferred
    sizes = defined_tools(before.skeleton)
    names = deferred_names(before.skeleton, deferral)
    dropped = removed_names(before.skeleton, deferral)
    main = result.main.records
    return Saving(
        deferral.patterns,
        tuple(names),
        result.state.policy,
        sum(sizes[n] for n in names),
        deferral.search_tokens if names else 0,
        sum(1 for _ in loads(before.skeleton, set(names))),
        sum(r.sent for r in before.records) - sum(r.sent for r in main),
        sum(r.cost for r in before.records) - sum(r.cost for r in main),
        tuple(dropped),
        sum(sizes[n] for n in dropped),
    )


def defer_links(
    state: ViewState, tools: list[ToolShare], servers: list[ToolShare], fallback: str
) -> dict[str, str]:
    """Per tool with a definition (keyed by its name) and per MCP server (keyed
    "server:<name>"), the query that also defers it, and for those never called (keyed
    "remove:<name>" and "remove-server:<name>") the query that also removes it; under
    as_logged, which replays what was sent, the query switches to `fallback` (the run's
    own policy, or none)."""
    chosen = state.deferral.patterns if state.deferral else ()
    gone = state.deferral.removed if state.deferral else ()
    policy = fallback if state.policy == REPLAY else state.policy
    base = (
        state
        if policy == state.policy
        else replace(state, policy=policy, params=POLICIES[policy].Params())
    )
    out = {}
    for t in tools:
        if t.definitions and t.name not in chosen and t.name != SEARCH_TOOL:
            out[t.name] = base.query(defer=",".join((*chosen, t.name)))
            if not t.calls:
                out[f"remove:{t.name}"] = base.query(remove=",".join((*gone, t.name)))
    for s in servers:
        pattern = f"mcp__{s.name}__*"
        if s.name != BUILT_IN and s.definitions and pattern not in chosen:
            out[f"server:{s.name}"] = base.query(defer=",".join((*chosen, pattern)))
            if not s.calls:
                out[f"remove-server:{s.name}"] = base.query(remove=",".join((*gone, pattern)))
    return out
