"""Sweeps: create one with a cell per (run, configuration) (webapp.tasks.queue_sweep
fans them out to the workers), and compute a cell (what a worker does)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from contextsim.analysis.problems import detect
from contextsim.analysis.sweep import Config, outcome
from contextsim.counting.estimators import Estimator
from contextsim.engine.simulate import simulate
from contextsim.registry import POLICIES
from contextsim.truth.reconcile import Reconciliation
from webapp.dashboard.analysis import run_prices, run_reconciliation
from webapp.estimators.reads import estimators_for
from webapp.jobs import services as jobs
from webapp.models import Run, Sweep, SweepCell
from webapp.store.reads import skeleton_of

OPEN = (SweepCell.Status.QUEUED, SweepCell.Status.RUNNING)
logger = logging.getLogger(__name__)


@transaction.atomic
def create_sweep(
    owner: User,
    runs: Sequence[Run],
    configs: Sequence[Config],
    *,
    estimator: str,
    hard_limit: int,
    title: str = "",
) -> Sweep:
    """Save a sweep and its queued cells, all or nothing. The caller queues them
    (webapp.tasks.queue_sweep)."""
    if not runs:
        raise ValueError("runs: choose at least one run")
    cells = len(runs) * len(configs)
    if cells > settings.MAX_SWEEP_CELLS:
        raise ValueError(
            f"{len(runs)} runs x {len(configs)} configurations is {cells:,} cells; at most "
            f"{settings.MAX_SWEEP_CELLS:,} in one sweep: fewer budgets, policies or runs"
        )
    waiting = SweepCell.objects.filter(
        sweep__owner=owner, status__in=(SweepCell.Status.QUEUED, SweepCell.Status.RUNNING)
    ).count()
    if waiting + cells > settings.MAX_QUEUED_CELLS:
        raise ValueError(
            f"{waiting:,} cells of your sweeps are still waiting; at most "
            f"{settings.MAX_QUEUED_CELLS:,} at once: wait for them or start a smaller sweep"
        )
    sweep = Sweep.objects.create(
        owner=owner,
        title=title or _title(runs, configs),
        estimator=estimator,
        hard_limit=hard_limit,
        configs=[c.to_dict() for c in configs],
    )
    sweep.runs.set(runs)
    SweepCell.objects.bulk_create(
        SweepCell(sweep=sweep, run=run, config=i) for run in runs for i in range(len(configs))
    )
    return sweep


def _title(runs: Sequence[Run], configs: Sequence[Config]) -> str:
    policies = ", ".join(dict.fromkeys(c.policy for c in configs))
    what = runs[0].title if len(runs) == 1 else f"{len(runs)} runs"
    return f"{policies} over {what}"


def run_cells(cell_ids: Sequence[int]) -> None:
    """Take the queued cells of `cell_ids` (the cells of one run) in one claim
    (webapp.jobs.services), simulate each, the run's skeleton read once, and write their
    outcomes, or errors, in one transaction; a cell not queued (done, or held by a live
    worker: a task delivered twice) is left as it is. Marks each sweep finished after
    its last cell."""
    claimed = jobs.claim_all(SweepCell, cell_ids)
    if not claimed:
        return
    found = SweepCell.objects.select_related("sweep__owner", "run").filter(pk__in=claimed)
    cells = list(found.order_by("pk"))
    with jobs.holding_all(SweepCell, claimed):
        results = {c.pk: (claimed[c.pk], fields) for c, fields in _computed(cells)}
    with transaction.atomic():
        lost = jobs.finish_all(SweepCell, results)
    for cell_id in lost:
        logger.warning("sweep cell %s: another attempt took it over", cell_id)
    for sweep_id in {c.sweep_id for c in cells}:
        if not SweepCell.objects.filter(sweep_id=sweep_id, status__in=OPEN).exists():
            Sweep.objects.filter(pk=sweep_id, finished__isnull=True).update(finished=timezone.now())


def run_cell(cell_id: int) -> None:
    """run_cells of one cell."""
    run_cells([cell_id])


def _computed(cells: list[SweepCell]) -> Iterator[tuple[SweepCell, dict[str, Any]]]:
    """Each cell with its final fields; a cell fails with the reason when its owner's
    estimators cannot be read (no cell may stay "running")."""
    counters: dict[int, dict[str, Estimator]] = {}
    fits: dict[tuple[int, str], Reconciliation | None] = {}  # a run's fit, made once
    for cell in cells:
        owner = cell.sweep.owner
        try:
            if owner.pk not in counters:
                counters[owner.pk] = estimators_for(owner)
        except Exception as exc:
            logger.exception("sweep cell %s: the estimators could not be read", cell.pk)
            yield cell, {"status": SweepCell.Status.FAILED, "error": f"internal error: {exc}"}
            continue
        yield cell, _compute(cell, counters[owner.pk], fits)


def _compute(
    cell: SweepCell,
    counters: dict[str, Estimator],
    fits: dict[tuple[int, str], Reconciliation | None],
) -> dict[str, Any]:
    """The cell's final fields: its outcome, or why it failed (`counters`: the
    estimators its sweep's owner may use; `fits`: the runs' reconciliations made so far
    in this batch, by run and estimator)."""
    sweep = cell.sweep
    try:
        config = Config.from_dict(sweep.configs[cell.config])
        counter = counters.get(sweep.estimator)
        if counter is None:
            raise ValueError(f"estimator {sweep.estimator} no longer exists")
        sk = skeleton_of(cell.run, sweep.estimator, counter)
        # The sizes and prices the dashboard shows for this run: one truth per page.
        key = (cell.run_id, sweep.estimator)
        if key not in fits:
            fits[key] = run_reconciliation(cell.run, sk, counter)
        sim = simulate(
            sk,
            POLICIES[config.policy],
            config.make_params(),
            budget=config.budget,
            hard_limit=sweep.hard_limit,
            count=counter.count,
            prices=run_prices(cell.run),
            reconcile=fits[key],
            deferral=config.deferral,
        )
        return {"status": SweepCell.Status.DONE, "outcome": outcome(sim, detect(sim)).to_dict()}
    except ValueError as exc:
        return {"status": SweepCell.Status.FAILED, "error": str(exc)}
    except Exception as exc:
        # Whatever else went wrong, the cell must not stay "running": the sweep would
        # never finish. The details go to the log.
        logger.exception("sweep cell %s failed", cell.pk)
        return {"status": SweepCell.Status.FAILED, "error": f"internal error: {exc}"}
