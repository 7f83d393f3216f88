"""Reads for the "use it in your agent" panel: the dashboard's policy, with the
parameters, budget and hard limit chosen, as the real system's configuration
(contextsim.registry), and the tools it defers as tool search's."""

from __future__ import annotations

from collections.abc import Sequence

from contextsim.registry import export
from contextsim.systems.anthropic_api.tool_search import tool_search_snippets
from contextsim.systems.exporting import ExportContext, Snippet
from webapp.dashboard.state import ViewState
from webapp.models import Run


def snippets(run: Run, state: ViewState, defined: Sequence[str] = ()) -> tuple[Snippet, ...]:
    """The configuration snippets of the state's policy for `run`'s model, then, when
    the state defers some of the tools the run `defined`, tool search's; () when the
    policy has no real counterpart and nothing is deferred."""
    ctx = ExportContext(state.params, state.budget, state.hard_limit, run.model)
    found = export(state.policy, ctx)
    deferral = state.deferral
    if deferral is None:
        return found
    names = [n for n in defined if deferral.matches(n)]
    removed = [n for n in defined if deferral.drops(n)]
    return found + tool_search_snippets(deferral.patterns, names, removed)
