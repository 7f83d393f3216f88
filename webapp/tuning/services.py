"""Tunings (issue 35): create one with a cell per (run, mechanism), search a cell (what
a worker does: contextsim.analysis.tuning over one run, simulated as its dashboard
simulates it), cancel the cells not started. webapp.tasks.queue_tuning fans the cells
out to the workers; webapp.jobs.services reaps them as it reaps sweep cells."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from contextsim.analysis.outcomes import figures_of
from contextsim.analysis.tuning import (
    POLICY_PREFIX,
    Dimension,
    Mechanism,
    dimensions_of,
    search_run,
    stored_dimensions,
)
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.deferral import Deferral
from contextsim.engine.simulate import REPLAY, Simulation, simulate
from contextsim.registry import EVERY_MECHANISM, POLICIES, mechanisms, own_trigger
from webapp.dashboard.analysis import run_prices, run_reconciliation
from webapp.estimators.reads import estimators_for
from webapp.jobs import services as jobs
from webapp.models import Run, Tuning, TuningCell
from webapp.store.reads import skeleton_of
from webapp.tuning.reads import CANCELLED, run_window

OPEN = (TuningCell.Status.QUEUED, TuningCell.Status.RUNNING)
logger = logging.getLogger(__name__)


@transaction.atomic
def create_tuning(
    owner: User,
    runs: Sequence[Run],
    *,
    estimator: str,
    only: Sequence[str] | None = None,
    everywhere: Sequence[str] = (),
    extra: Sequence[Mechanism] = (),
    title: str = "",
) -> Tuning:
    """Save a tuning and its queued cells, all or nothing, over the grid made for the
    smallest window of each mechanism's runs:
    - each mechanism the runs' systems can use (`only` those named, when given), a cell
      per run that can use it;
    - each mechanism of `everywhere` (any by name, as `contextsim tune --mechanism`)
      and of `extra` (made on request: any policy over a grid given by hand,
      tuning.policy_mechanism), a cell per run.
    The caller queues the cells (webapp.tasks.queue_tuning). Raises ValueError naming
    what cannot be done (an unknown mechanism among them)."""
    if not runs:
        raise ValueError("runs: choose at least one run")
    unknown = [n for n in everywhere if n not in EVERY_MECHANISM]
    if unknown:
        raise ValueError(f"mechanism: unknown {', '.join(unknown)}")
    chosen = [r for r in runs if not r.compaction_request]
    by_name: dict[str, list[Run]] = {}
    found: dict[str, Any] = {}
    for run in chosen:
        own = [m for m in mechanisms(run.format) if only is None or m.name in only]
        names = {m.name for m in own}
        tried = [EVERY_MECHANISM[n] for n in everywhere if n not in names] + list(extra)
        for m in own + tried:
            found[m.name] = m
            by_name.setdefault(m.name, []).append(run)
    if not by_name:
        asked = ", ".join([*(only or ()), *everywhere]) or "any"
        raise ValueError(f"mechanism: no run chosen can use {asked} mechanism")
    spaces = {}
    for name, users in by_name.items():
        m = found[name]
        window = min(run_window(r)[0] for r in users)
        dims: tuple[Dimension, ...] = m.space(window)
        spaces[name] = {
            "policy": m.policy,
            "label": m.label,
            "window": window,
            "dimensions": stored_dimensions(dims),
        }
    cells = sum(len(users) for users in by_name.values())
    if cells > settings.MAX_SWEEP_CELLS:
        raise ValueError(
            f"{cells:,} cells (runs x mechanisms); at most {settings.MAX_SWEEP_CELLS:,}: "
            "fewer runs or mechanisms"
        )
    tuning = Tuning.objects.create(
        owner=owner,
        title=title or _title(chosen, list(by_name)),
        estimator=estimator,
        spaces=spaces,
    )
    tuning.runs.set(chosen)
    TuningCell.objects.bulk_create(
        TuningCell(tuning=tuning, run=run, mechanism=name)
        for name, users in by_name.items()
        for run in users
    )
    return tuning


def _title(runs: Sequence[Run], names: list[str]) -> str:
    what = runs[0].title if len(runs) == 1 else f"{len(runs)} runs"
    return f"{', '.join(names)} for {what}"[:300]


def run_cells(cell_ids: Sequence[int]) -> None:
    """Take the queued cells of `cell_ids` in one claim, search each (the estimators of
    the tuning's owner), and write their results, or errors, in one transaction; a cell
    not queued (done, cancelled, or held by a live worker) is left as it is. Marks each
    tuning finished after its last cell."""
    claimed = jobs.claim_all(TuningCell, cell_ids)
    if not claimed:
        return
    found = TuningCell.objects.select_related("tuning__owner", "run").filter(pk__in=claimed)
    cells = list(found.order_by("pk"))
    with jobs.holding_all(TuningCell, claimed):
        results = {c.pk: (claimed[c.pk], _compute(c)) for c in cells}
    with transaction.atomic():
        lost = jobs.finish_all(TuningCell, results)
    for cell_id in lost:
        logger.warning("tuning cell %s: another attempt took it over", cell_id)
    for tuning_id in {c.tuning_id for c in cells}:
        finish_if_done(tuning_id)


def finish_if_done(tuning_id: int) -> None:
    """Mark the tuning finished once no cell of it is open."""
    if not TuningCell.objects.filter(tuning_id=tuning_id, status__in=OPEN).exists():
        Tuning.objects.filter(pk=tuning_id, finished__isnull=True).update(finished=timezone.now())


@transaction.atomic
def do_cancel(tuning: Tuning) -> int:
    """Cancel the tuning's cells no worker has started (those running finish); returns
    how many. Its page then shows what the finished cells found."""
    count = TuningCell.objects.filter(tuning=tuning, status=TuningCell.Status.QUEUED).update(
        status=TuningCell.Status.FAILED, error=CANCELLED, finished=timezone.now()
    )
    Tuning.objects.filter(pk=tuning.pk, cancelled__isnull=True).update(cancelled=timezone.now())
    finish_if_done(tuning.pk)
    return count


def _compute(cell: TuningCell) -> dict[str, Any]:
    """The cell's final fields: its result, or why it failed."""
    try:
        return {"status": TuningCell.Status.DONE, "result": search_cell(cell)}
    except ValueError as exc:
        return {"status": TuningCell.Status.FAILED, "error": str(exc)}
    except Exception as exc:
        # The cell must not stay "running": the tuning would never finish.
        logger.exception("tuning cell %s failed", cell.pk)
        return {"status": TuningCell.Status.FAILED, "error": f"internal error: {exc}"}


def search_cell(cell: TuningCell) -> dict[str, Any]:
    """One run searched over its mechanism's grid, simulated as its dashboard simulates
    it (its skeleton, fit, prices and window): every point's outcome in grid order,
    the simulations it took, and its outcome as logged and under its own policy."""
    tuning, run = cell.tuning, cell.run
    space = tuning.spaces[cell.mechanism]
    dims = dimensions_of(space["dimensions"])
    counter = estimators_for(tuning.owner).get(tuning.estimator)
    if counter is None:
        raise ValueError(f"estimator {tuning.estimator} no longer exists")
    sk = skeleton_of(run, tuning.estimator, counter)
    rec = run_reconciliation(run, sk, counter)
    prices = run_prices(run)
    hard_limit, budget = run_window(run)

    def simulated(
        policy: str,
        values: Mapping[str, Any],
        defers: Callable[[Skeleton, int], Deferral | None] | None,
    ) -> Simulation:
        chosen = POLICIES[policy]
        params = dataclasses.replace(chosen.Params(), **values) if values else None
        return simulate(
            sk,
            chosen,
            params,
            budget=budget,
            hard_limit=hard_limit,
            count=counter.count,
            prices=prices,
            reconcile=rec,
            deferral=defers(sk, hard_limit) if defers is not None else None,
        )

    own = own_trigger(run.format)
    mechanism = EVERY_MECHANISM.get(cell.mechanism)
    if mechanism is None and cell.mechanism.startswith(POLICY_PREFIX):
        # Any policy on request: its grid is the one stored.
        mechanism = Mechanism(cell.mechanism, space["label"], space["policy"], lambda w: dims)
    if mechanism is None or space["policy"] not in POLICIES:
        raise ValueError(f"mechanism {cell.mechanism} no longer exists")
    found = search_run(simulated, mechanism, dims, own.name if own else REPLAY)
    return {
        "points": [figures_of(o) for o in found.points],
        "simulated": found.simulated,
        "logged": figures_of(found.logged),
        "current": figures_of(found.current),
        "current_policy": found.current_policy,
    }
