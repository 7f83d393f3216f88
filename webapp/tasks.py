"""Celery tasks: each takes ids and calls a service, nothing more."""

from celery import shared_task

from webapp.services import imports, sweeps


@shared_task
def import_upload(job_id: int) -> None:
    imports.run_import(job_id)


@shared_task
def run_sweep_cell(cell_id: int) -> None:
    sweeps.run_cell(cell_id)
