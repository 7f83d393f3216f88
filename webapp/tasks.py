"""Celery tasks: each takes ids and calls a service, nothing more."""

from celery import shared_task

from webapp.services import imports


@shared_task
def import_upload(job_id: int) -> None:
    imports.run_import(job_id)
