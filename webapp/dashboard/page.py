"""What a run's dashboard page shows, typed: the frame every page of a run has (the run,
who looks, the controls' choices) and the analysis the controls ask for. Views fill
these from the reads, and hand templates their fields (`context`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from django.http import QueryDict

from contextsim.analysis.problems import Problem
from contextsim.analysis.tool_usage import ToolShare
from contextsim.counting.estimators import Estimator
from contextsim.engine.policy import Policy
from contextsim.systems.exporting import Snippet
from webapp.dashboard.analysis import Analysis
from webapp.dashboard.deferring import Saving
from webapp.dashboard.state import ViewState
from webapp.dashboard.trace import TraceRow
from webapp.models import Run
from webapp.runs.sessions import StartedBy


def context(view: object) -> dict[str, Any]:
    """A view model's fields as a template's context (no copy of their values)."""
    return {f.name: getattr(view, f.name) for f in fields(view)}  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Frame:
    """Around every view of a run: the run, what the person may do with it, the
    controls' choices and what the form shows."""

    run: Run
    is_owner: bool
    can_sweep: bool
    policies: Mapping[str, Policy]
    query: QueryDict
    siblings: list[Run]
    started_by: StartedBy | None
    timed: bool
    live: bool
    counting_done: int | None
    form: dict[str, str]
    defaults: dict[str, Any]
    estimators: dict[str, Estimator]
    lenders: list[Run]
    share_token: str = ""
    """For the owner of a run others cannot see: its newest share link's token, which
    "copy link" copies a link with ("" when it has none: the link is private)."""


@dataclass(frozen=True, slots=True)
class Dashboard:
    """The dashboard of one analysis: summaries, chart, problems, a page of the trace,
    the policy's controls and its configuration for the real system."""

    state: ViewState
    result: Analysis
    summary: dict[str, Any]
    other_summary: dict[str, Any] | None
    baseline_summary: dict[str, Any] | None
    figure: dict[str, Any]
    problems: list[Problem]
    problem_kind: str
    problem_order: bool
    """Whether the problems are listed in step order (else the costliest first)."""
    costliest: Problem | None
    """The problem that cost most, called out at the top (None when none cost)."""
    tools: list[ToolShare]
    servers: list[ToolShare]
    problem_kinds: list[str]
    rows: list[TraceRow]
    sort: str
    """The trace table's order (trace.SORTS)."""
    descending: bool
    sort_queries: dict[str, str]
    """Per column of the trace table, the query string that sorts by it."""
    table_query: str
    """The query string of the trace table's current order, for its pages."""
    page: int
    pages: int
    params: list[dict[str, Any]]
    param_errors: dict[str, str]
    """The policy parameters the query got wrong (left at their defaults), and why."""
    snippets: tuple[Snippet, ...]
    permalink: str
    defer_links: dict[str, str]
    """Per tool with a definition, and per MCP server ("server:<name>"), the query
    that defers it too (webapp.dashboard.deferring)."""
    deferral: Saving | None
    """What the state's deferral saves; None when it defers nothing."""
    undefer_query: str
    """The state's query with nothing deferred."""
    baseline_query: str
