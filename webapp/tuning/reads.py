"""Reading a tuning: its progress, and once cells are done, each mechanism's search over
the runs (their cells summed: contextsim.analysis.tuning.combined), the recommended
setting against the runs as logged and as simulated under their own policy, the
frontier, the runs the setting puts at risk (each a link to its dashboard under the
setting), the real system's configuration and the frontier chart. Reads only."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.db.models import Count, Q
from django.http import Http404, QueryDict

from contextsim.analysis.outcomes import (
    NOTHING,
    Outcome,
    outcome_of,
    removed_then_asked,
    total_of,
)
from contextsim.analysis.tuning import Tuning as Search
from contextsim.analysis.tuning import combined, dimensions_of
from contextsim.registry import EVERY_MECHANISM, POLICIES, export
from contextsim.systems.exporting import ExportContext, Snippet
from webapp.dashboard.analysis import analyse
from webapp.dashboard.state import BadQuery, defaults_for, read_state
from webapp.models import Run, Tuning, TuningCell
from webapp.store.reads import skeleton_of

CANCELLED = "cancelled"
"""The error of a cell cancelled before a worker took it."""


def run_window(run: Run) -> tuple[int, int]:
    """(hard limit, budget) of the run as its dashboard's defaults give them."""
    found = defaults_for(run.model, run.context_window)
    return int(found["hard_limit"]), int(found["budget"])


@dataclass(frozen=True, slots=True)
class Progress:
    """Cells done, failed (cancelled ones apart), cancelled and still open."""

    done: int
    failed: int
    cancelled: int
    open: int

    @property
    def total(self) -> int:
        return self.done + self.failed + self.cancelled + self.open

    @property
    def finished(self) -> bool:
        return self.open == 0


@dataclass(frozen=True, slots=True)
class AtRisk:
    """A run the recommended setting would have sent over the limit or made remove
    what the agent asked for again, with the link to its dashboard under the setting."""

    run: Run
    outcome: Outcome
    link: str


@dataclass(slots=True)
class MechanismView:
    """One mechanism's search as its section shows it."""

    name: str
    label: str
    policy: str
    window: int
    runs: int
    failed: list[tuple[Run, str]] = field(default_factory=list)
    search: Search | None = None
    logged: Outcome = NOTHING
    current: Outcome = NOTHING
    current_policies: tuple[str, ...] = ()
    setting: dict[str, Any] | None = None
    chosen: Outcome | None = None
    frontier: list[tuple[dict[str, Any], Outcome]] = field(default_factory=list)
    at_risk: list[AtRisk] = field(default_factory=list)
    snippets: tuple[Snippet, ...] = ()
    infeasible: int = 0
    no_better: dict[str, Any] | None = None
    """The cheapest feasible setting when it costs no less than the runs as they ran
    (then nothing is recommended)."""

    @property
    def saved(self) -> float:
        return self.current.cost - self.chosen.cost if self.chosen is not None else 0.0

    @property
    def saved_share(self) -> float:
        return self.saved / self.current.cost if self.current.cost else 0.0


def own_tunings(owner: User) -> list[Tuning]:
    """The owner's tunings, newest first."""
    return list(Tuning.objects.filter(owner=owner))


def get_tuning(owner: User, public_id: str) -> Tuning:
    """The owner's tuning `public_id`; 404 for anyone else's (private by default)."""
    found = Tuning.objects.filter(owner=owner, public_id=public_id).first()
    if found is None:
        raise Http404("no such tuning")
    return found


def progress(tuning: Tuning) -> Progress:
    status = TuningCell.Status
    counts = TuningCell.objects.filter(tuning=tuning).aggregate(
        done=Count("pk", filter=Q(status=status.DONE)),
        failed=Count("pk", filter=Q(status=status.FAILED) & ~Q(error=CANCELLED)),
        cancelled=Count("pk", filter=Q(status=status.FAILED, error=CANCELLED)),
        open=Count("pk", filter=Q(status__in=(status.QUEUED, status.RUNNING))),
    )
    return Progress(counts["done"], counts["failed"], counts["cancelled"], counts["open"])


def mechanism_views(tuning: Tuning) -> list[MechanismView]:
    """Each mechanism's section, from the cells done so far (in run order)."""
    cells = TuningCell.objects.filter(tuning=tuning).select_related("run").order_by("run_id")
    by_name: dict[str, list[TuningCell]] = {}
    for cell in cells:
        by_name.setdefault(cell.mechanism, []).append(cell)
    return [
        _view(name, space, by_name.get(name, []), tuning.estimator)
        for name, space in tuning.spaces.items()
    ]


MAX_AT_RISK = 30
"""Runs at risk listed (each is simulated again to find its step)."""


def _step_link(run: Run, view: MechanismView, query: str, estimator: str) -> str:
    """The first step where the setting sends a request over the limit or removes what
    the agent asks for again, opened in the step inspector under the setting; the run's
    page when none is found."""
    state = read_state(
        QueryDict(f"{query}&estimator={estimator}"),
        defaults=defaults_for(run.model, run.context_window),
    )
    try:
        sim = analyse(run, state, alone=True).main
    except BadQuery:
        return f"/runs/{run.public_id}/?{query}"
    steps = [r.step for r in sim.records if r.rejected] + [s for s, _ in removed_then_asked(sim)]
    where = f"steps/{min(steps)}/" if steps else ""
    return f"/runs/{run.public_id}/{where}?{query}&estimator={estimator}"


def _view(
    name: str, space: dict[str, Any], cells: list[TuningCell], estimator: str
) -> MechanismView:
    view = MechanismView(
        name, space["label"], space["policy"], int(space["window"]), runs=len(cells)
    )
    view.failed = [(c.run, c.error) for c in cells if c.status == TuningCell.Status.FAILED]
    done = [c for c in cells if c.status == TuningCell.Status.DONE and c.result]
    results: list[dict[str, Any]] = [c.result for c in done if c.result]
    if not done:
        return view
    dims = dimensions_of(space["dimensions"])
    per_run = [[outcome_of(p) for p in r["points"]] for r in results]
    found = combined(dims, per_run, sum(int(r["simulated"]) for r in results))
    view.search = found
    view.logged = total_of([outcome_of(r["logged"]) for r in results])
    view.current = total_of([outcome_of(r["current"]) for r in results])
    view.current_policies = tuple(sorted({str(r["current_policy"]) for r in results}))
    view.infeasible = len(found.totals) - len(found.feasible())
    view.frontier = [(found.setting(p), found.totals[p]) for p in found.frontier()]
    best = found.recommended()
    if best is None:
        return view
    if found.totals[best].cost >= view.current.cost:
        view.no_better = found.setting(best)
        return view
    view.setting = found.setting(best)
    view.chosen = found.totals[best]
    mechanism = EVERY_MECHANISM.get(name)
    risky = [(c, o) for c, o in zip(done, found.per_run[best], strict=True) if o.risk or o.rejected]
    # Each link simulates its run again: only the runs listed.
    view.at_risk = [
        AtRisk(c.run, o, _step_link(c.run, view, _query(c.run, view, estimator), estimator))
        for c, o in risky[:MAX_AT_RISK]
    ]
    if mechanism is not None and mechanism.configure is not None:
        view.snippets = mechanism.configure(view.setting)
        return view
    first = done[0].run
    hard_limit, budget = run_window(first)
    params = dataclasses.replace(POLICIES[view.policy].Params(), **view.setting)
    view.snippets = export(view.policy, ExportContext(params, budget, hard_limit, first.model))
    return view


def _query(run: Run, view: MechanismView, estimator: str) -> str:
    """The run's page's query that simulates it under the chosen setting: the policy's
    parameters, or for a mechanism that defers tools, what it defers on this run."""
    mechanism = EVERY_MECHANISM.get(view.name)
    if mechanism is None or mechanism.defers is None or view.setting is None:
        return urlencode({"policy": view.policy, **(view.setting or {})})
    sk = skeleton_of(run, estimator)
    deferral = mechanism.defers(view.setting, sk, run_window(run)[0])
    query = {"policy": view.policy}
    if deferral is not None:
        query["defer"] = ",".join(deferral.patterns)
    return urlencode(query)


def frontier_figure(view: MechanismView) -> dict[str, Any]:
    """Every setting with no request over the limit as a point (dollars across, risk
    up), the frontier joined, the recommended setting and the runs as they ran marked."""
    found = view.search
    if found is None:
        return {"data": [], "layout": {}}
    feasible = found.feasible()

    def label(setting: dict[str, Any]) -> str:
        return ", ".join(f"{k}={v}" for k, v in setting.items())

    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "settings",
            "x": [round(found.totals[p].cost, 4) for p in feasible],
            "y": [found.totals[p].risk for p in feasible],
            "text": [label(found.setting(p)) for p in feasible],
            "marker": {"color": "#767676", "size": 6},
            "hovertemplate": "%{text}<br>$%{x:.2f}, risk %{y}<extra></extra>",
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "frontier",
            "x": [round(o.cost, 4) for _, o in view.frontier],
            "y": [o.risk for _, o in view.frontier],
            "text": [label(s) for s, _ in view.frontier],
            "line": {"color": "#2C7FB8"},
            "hovertemplate": "%{text}<br>$%{x:.2f}, risk %{y}<extra>frontier</extra>",
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": "as it ran (simulated)",
            "x": [round(view.current.cost, 4)],
            "y": [view.current.risk],
            "marker": {"color": "#000000", "size": 11, "symbol": "x"},
            "hovertemplate": "as it ran: $%{x:.2f}, risk %{y}<extra></extra>",
        },
    ]
    if view.chosen is not None and view.setting is not None:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "recommended",
                "x": [round(view.chosen.cost, 4)],
                "y": [view.chosen.risk],
                "text": [label(view.setting)],
                "marker": {"color": "#008060", "size": 14, "symbol": "star"},
                "hovertemplate": "recommended: %{text}<br>$%{x:.2f}, risk %{y}<extra></extra>",
            }
        )
    return {
        "data": data,
        "layout": {
            "margin": {"l": 50, "r": 10, "t": 10, "b": 40},
            "xaxis": {"title": {"text": "cost of the runs ($)"}, "rangemode": "tozero"},
            "yaxis": {"title": {"text": "risk (results asked for again)"}, "rangemode": "tozero"},
            "legend": {"orientation": "h", "y": -0.25},
            "plot_bgcolor": "#FFFFFF",
            "paper_bgcolor": "#FFFFFF",
        },
    }
