"""Celery tasks: each takes ids and calls a service, nothing more; and the small
functions that queue them, called by the views and commands once their work is saved
(services never import this module)."""

from __future__ import annotations

from celery import shared_task
from django.db import transaction

from webapp.models import Sweep, SweepCell
from webapp.services import imports, sweeps


@shared_task
def import_upload(job_id: int) -> None:
    imports.run_import(job_id)


@shared_task
def run_sweep_cell(cell_id: int) -> None:
    sweeps.run_cell(cell_id)


def queue_sweep(sweep: Sweep) -> None:
    """Once the current transaction commits, queue one task per open cell of `sweep`
    (a cell's task never runs before its row is visible to the worker)."""
    ids = list(
        sweep.cells.filter(status=SweepCell.Status.QUEUED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    transaction.on_commit(lambda: [run_sweep_cell.delay(cell_id) for cell_id in ids])
