"""Reading sweeps: a user's sweeps with their progress, and one sweep as its page shows
it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404
from django.urls import reverse
from django.utils import timezone

from contextsim.analysis.sweep import Config, Outcome, Totals, totals
from webapp.dashboard.state import config_query
from webapp.models import Run, Sweep, SweepCell


def visible_sweeps(user: User | AnonymousUser) -> QuerySet[Sweep]:
    """The user's own sweeps (sweeps are private)."""
    if not user.is_authenticated:
        return Sweep.objects.none()
    return Sweep.objects.filter(owner=user)


def get_sweep(user: User | AnonymousUser, public_id: str) -> Sweep:
    sweep = visible_sweeps(user).filter(public_id=public_id).first()
    if sweep is None:
        raise Http404("no such sweep")
    return sweep


@dataclass(frozen=True, slots=True)
class SweepCellView:
    status: str
    outcome: Outcome | None
    error: str
    link: str


@dataclass(frozen=True, slots=True)
class SweepView:
    """A sweep as its page shows it: progress, totals per configuration (over the cells
    done so far) and one row of cells per run, each linking to that run's dashboard
    under the cell's configuration."""

    sweep: Sweep
    configs: list[Config]
    totals: list[Totals]
    rows: list[tuple[Run, list[SweepCellView]]]
    done: int
    failed: int
    total: int
    workers: int

    @property
    def finished(self) -> bool:
        return self.done + self.failed == self.total

    @property
    def by_config(self) -> list[tuple[Config, Totals]]:
        return list(zip(self.configs, self.totals, strict=True))


def sweep_view(sweep: Sweep) -> SweepView:
    configs = [Config.from_dict(c) for c in sweep.configs]
    queries = [config_query(c, sweep.estimator, sweep.hard_limit) for c in configs]
    runs = {r.pk: r for r in sweep.runs.order_by("subagent", "title", "id")}
    grid: dict[int, list[SweepCellView | None]] = {pk: [None] * len(configs) for pk in runs}
    by_config: list[list[Outcome]] = [[] for _ in configs]
    counts = {"done": 0, "failed": 0, "total": 0}
    workers = set()
    for run_id, index, status, data, error, worker in sweep.cells.values_list(
        "run_id", "config", "status", "outcome", "error", "worker"
    ):
        found = Outcome.from_dict(data) if data is not None else None
        if found is not None:
            by_config[index].append(found)
        counts["total"] += 1
        counts[status] = counts.get(status, 0) + 1
        if worker:
            workers.add(worker)
        link = reverse("run", args=[runs[run_id].public_id])
        link += f"?{queries[index]}" if queries[index] else ""
        grid[run_id][index] = SweepCellView(status, found, error, link)
    rows = [(run, [c for c in grid[pk] if c is not None]) for pk, run in runs.items()]
    return SweepView(
        sweep,
        configs,
        [totals(cells) for cells in by_config],
        rows,
        counts["done"],
        counts["failed"],
        counts["total"],
        len(workers),
    )


def _count(rows: QuerySet[Any]) -> Coalesce:
    """A correlated COUNT(*) of `rows` (already filtered on OuterRef("pk")), 0 when none:
    counting in a subquery, not over a join of cells and runs, keeps the list fast."""
    counted = rows.order_by().values("sweep").annotate(n=Count("pk")).values("n")[:1]
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def sweep_list(user: User | AnonymousUser) -> QuerySet[Sweep]:
    """The user's sweeps, newest first, with their cell counts (`done`, `failed`,
    `total`) and run count (`run_count`)."""
    status = SweepCell.Status
    cells = SweepCell.objects.filter(sweep=OuterRef("pk"))
    runs = Sweep.runs.through.objects.filter(sweep=OuterRef("pk"))
    return (
        visible_sweeps(user)
        .annotate(
            total=_count(cells),
            done=_count(cells.filter(status=status.DONE)),
            failed=_count(cells.filter(status=status.FAILED)),
            run_count=_count(runs),
        )
        .order_by("-created", "-id")
    )


STALLED_AFTER = timedelta(seconds=30)
"""No cell taken this long after the sweep started: say that no worker seems to run."""


@dataclass(frozen=True, slots=True)
class Progress:
    done: int
    failed: int
    total: int
    stalled: bool
    """No worker has taken any cell yet, STALLED_AFTER since the sweep started."""
    retrying: int = 0
    """Open cells on a second or later attempt: a worker working on them was lost."""

    @property
    def finished(self) -> bool:
        return self.done + self.failed == self.total


def sweep_progress(sweep: Sweep) -> Progress:
    """How many of the sweep's cells are done and failed: one small query, for polling."""
    status = SweepCell.Status
    found = sweep.cells.aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=status.DONE)),
        failed=Count("pk", filter=Q(status=status.FAILED)),
        queued=Count("pk", filter=Q(status=status.QUEUED)),
        retrying=Count(
            "pk",
            filter=Q(status=status.QUEUED, attempts__gte=1)
            | Q(status=status.RUNNING, attempts__gte=2),
        ),
    )
    idle = found["queued"] == found["total"] > 0
    stalled = idle and timezone.now() - sweep.created > STALLED_AFTER
    return Progress(found["done"], found["failed"], found["total"], stalled, found["retrying"])
