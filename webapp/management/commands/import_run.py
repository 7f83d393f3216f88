"""python manage.py import_run PATH... : what the upload page does, from the shell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextsim.ingest.detect import IMPORTERS
from webapp import tasks
from webapp.ingest.uploads import services as imports
from webapp.models import ImportJob, Visibility
from webapp.runtime import heap


class Command(BaseCommand):
    help = "Import agent logs (format detected unless --format is given)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--format", choices=sorted(IMPORTERS))
        parser.add_argument(
            "--owner", default="", help="username owning the runs (default: the local user)"
        )
        parser.add_argument("--public", action="store_true", help="make the runs public")
        parser.add_argument(
            "--again",
            action="store_true",
            help="import a file even if the same bytes were imported before",
        )
        parser.add_argument(
            "--queue",
            action="store_true",
            help="leave the import to a worker (a large file): print the job and return",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        heap.collect_seldom()  # a large import keeps its parsed messages while writing
        username = options["owner"] or settings.LOCAL_USER or "local"
        owner, _ = get_user_model().objects.get_or_create(username=username)
        failed = 0
        for name in options["paths"]:
            path = Path(name)
            if not path.is_file():
                self.stderr.write(f"error: {name}: no such file")
                failed += 1
                continue
            with path.open("rb") as stream:
                job = imports.store_upload(owner, path.name, stream, options["format"] or "")
            if options["again"]:
                job = imports.import_again(job)
            if options["queue"]:
                tasks.import_upload.delay(job.pk)
                self.stdout.write(f"{name}: queued as job {job.public_id}")
                continue
            job = imports.run_import(job.pk)
            if job.status != ImportJob.Status.DONE:
                self.stderr.write(f"error: {job.error}")
                failed += 1
                continue
            for warning in job.warnings:
                self.stderr.write(f"warning: {warning}")
            if job.duplicate_of is not None:
                self.stderr.write(
                    f"{name}: already imported (the same bytes); not imported again "
                    "(--again imports it anyway)"
                )
            runs = (job.duplicate_of or job.upload).runs.all()
            if options["public"]:
                runs.update(visibility=Visibility.PUBLIC)
            for run in runs:
                self.stdout.write(
                    f"{name}: {job.format}: {run.title} ({run.request_count} requests) "
                    f"/runs/{run.public_id}/"
                )
            for run in job.recognised.all():
                self.stdout.write(
                    f"{name}: {job.format}: {run.title} ({run.request_count} requests, "
                    f"imported before) /runs/{run.public_id}/"
                )
        if failed:
            raise CommandError(f"{failed} of {len(options['paths'])} file(s) not imported")
