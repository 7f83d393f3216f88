"""Reads for the "use it in your agent" panel: the dashboard's policy, with the
parameters, budget and hard limit chosen, as the real system's configuration
(contextsim.registry)."""

from __future__ import annotations

from contextsim.registry import export
from contextsim.systems.exporting import ExportContext, Snippet
from webapp.dashboard.state import ViewState
from webapp.models import Run


def snippets(run: Run, state: ViewState) -> tuple[Snippet, ...]:
    """The configuration snippets of the state's policy for `run`'s model; () when the
    policy has no real counterpart."""
    ctx = ExportContext(state.params, state.budget, state.hard_limit, run.model)
    return export(state.policy, ctx)
