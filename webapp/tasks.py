"""Celery tasks: each takes ids and calls a service, nothing more; and the small
functions that queue them, called by the views and commands once their work is saved
(services never import this module)."""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery, current_app, shared_task
from celery.signals import worker_init, worker_ready
from django.db import transaction

from webapp.ingest.uploads import services as imports
from webapp.jobs import services as jobs
from webapp.models import Run, Sweep, SweepCell, Tuning, TuningCell
from webapp.runtime import heap
from webapp.store.actions import derivation
from webapp.sweeps import services as sweeps
from webapp.tuning import services as tunings

logger = logging.getLogger(__name__)


@shared_task
def import_upload(job_id: int) -> None:
    imports.run_import(job_id)


@shared_task
def run_sweep_cell(cell_id: int) -> None:
    sweeps.run_cell(cell_id)


@shared_task
def run_sweep_cells(cell_ids: list[int]) -> None:
    sweeps.run_cells(cell_ids)


def queue_sweep(sweep: Sweep) -> None:
    """Once the current transaction commits, queue one task per run of `sweep` with
    its open cells (a cell's task never runs before its row is visible to the worker):
    the cells of a run share its skeleton, read once by the worker that takes them."""
    rows = sweep.cells.filter(status=SweepCell.Status.QUEUED).order_by("run_id", "pk")
    batches: dict[int, list[int]] = {}
    for cell_id, run_id in rows.values_list("pk", "run_id"):
        batches.setdefault(run_id, []).append(cell_id)
    transaction.on_commit(lambda: [run_sweep_cells.delay(ids) for ids in batches.values()])


@shared_task
def run_tuning_cells(cell_ids: list[int]) -> None:
    tunings.run_cells(cell_ids)


def queue_tuning(tuning: Tuning) -> None:
    """Once the current transaction commits, queue one task per queued cell of
    `tuning` (each searches one run for one mechanism)."""
    ids = list(
        tuning.cells.filter(status=TuningCell.Status.QUEUED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    transaction.on_commit(lambda: [run_tuning_cells.delay([pk]) for pk in ids])


@shared_task
def store_report(run_id: int, reference: str) -> None:
    """Store a run's estimator report a view computed (webapp.store.reads)."""
    run = Run.objects.filter(pk=run_id).first()
    if run is not None:
        derivation.do_store_report(run, reference)


@shared_task
def derive_pending() -> None:
    """Store the skeletons and counts of the runs that lack them for their revision
    (idle live runs, older layouts); run every DERIVE_EVERY seconds by celery beat."""
    derivation.do_derive_pending(seconds=derivation.DERIVE_SECONDS)


@shared_task
def reap_jobs() -> None:
    """Send again the jobs whose worker or task was lost (webapp.jobs.services.reap),
    and index the text an import that ended early left unindexed
    (imports.index_left); run every half lease by celery beat (`serve` runs it inside
    its worker)."""
    found = jobs.reap(queue_empty=_queue_empty())
    for job_id in found.imports:
        import_upload.delay(job_id)
    for cell_id in found.cells:
        run_sweep_cell.delay(cell_id)
    for cell_id in found.tuning_cells:
        run_tuning_cells.delay([cell_id])
    imports.index_left()


def _queue_empty(app: Celery = current_app) -> bool:
    """Whether the broker holds no task waiting for a worker (False when it cannot tell:
    then nothing queued is sent twice)."""
    try:
        with app.connection_for_read() as conn:
            queue = app.conf.task_default_queue
            channel: Any = conn.default_channel  # a kombu virtual or AMQP channel
            _, waiting, _ = channel.queue_declare(queue=queue, passive=True)
    except Exception as exc:
        if "NOT_FOUND" in str(exc):
            # Redis drops an empty list, and a passive declare then finds no queue.
            return True
        logger.warning("could not read the broker's queue length", exc_info=True)
        return False
    return int(waiting) == 0


@worker_ready.connect
def _reap_at_start(**_: object) -> None:
    # A worker started after a crash takes up what the lost one left at once,
    # rather than at the next beat.
    reap_jobs.delay()


@worker_init.connect
def _settle_heap(**_: object) -> None:
    # Before the pool starts: forked children inherit the frozen heap and thresholds.
    heap.settle()
    heap.collect_seldom()
