"""Background jobs that survive a lost worker, on every broker.

The database, not the broker, is the record of every import job and sweep cell: its
state, how many times a worker took it (`attempts`) and until when the taking worker's
hold lasts (`lease_until`). A worker takes a job with one conditional update (`claim`),
renews the lease while it works (`holding`), and writes its result together with the
state change, only while the lease is still its own (`finish`). A worker killed
mid-job leaves the lease to run out; `reap` then gives the job back to the queue, up
to JOB_ATTEMPTS times, and fails it as "worker lost" after that. A task delivered
twice finds the job taken or done and does nothing, so the same import never saves its
runs twice. The file-system broker deletes a message once a worker fetches it, so a
job whose task was fetched by a worker that then died would wait forever: `reap` sends
queued jobs again once the broker's queue is empty.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from webapp.models import ImportJob, Run, Sweep, SweepCell, Tuning, TuningCell, Upload
from webapp.store.actions import derivation, saving

logger = logging.getLogger(__name__)

JobModel = type[ImportJob] | type[SweepCell] | type[TuningCell]
WORKER_LOST = "worker lost"


class LeaseLost(Exception):
    """The job's lease ran out and the job went to another attempt: this one's result
    must not be written."""


def lease() -> timedelta:
    return timedelta(seconds=settings.JOB_LEASE_SECONDS)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def claim(model: JobModel, pk: int) -> int | None:
    """Take the queued job `pk` for this process: its attempt number, or None when it
    is not queued (done, failed, or held by another worker)."""
    now = timezone.now()
    with transaction.atomic():
        taken = model.objects.filter(pk=pk, status=model.Status.QUEUED).update(
            status=model.Status.RUNNING,
            attempts=F("attempts") + 1,
            lease_until=now + lease(),
            worker=worker_name()[:200],
        )
        if not taken:
            return None
        attempt: int = model.objects.values_list("attempts", flat=True).get(pk=pk)
    return attempt


def claim_all(model: JobModel, pks: Sequence[int]) -> dict[int, int]:
    """Take every queued job of `pks` for this process in one statement: the attempt
    number of each one taken, by id (those done, failed or held by another worker are
    left out)."""
    until = timezone.now() + lease()
    me = worker_name()[:200]
    with transaction.atomic():
        taken = model.objects.filter(pk__in=pks, status=model.Status.QUEUED).update(
            status=model.Status.RUNNING,
            attempts=F("attempts") + 1,
            lease_until=until,
            worker=me,
        )
        if not taken:
            return {}
        # The lease's end, to the microsecond, tells the rows this statement took: a
        # process claims one batch at a time (a worker process runs one task at once).
        mine = model.objects.filter(
            pk__in=pks, status=model.Status.RUNNING, worker=me, lease_until=until
        )
        return dict(mine.values_list("pk", "attempts"))


def finish_all(model: JobModel, results: dict[int, tuple[int, dict[str, Any]]]) -> list[int]:
    """`finish` for each job of `results` (id -> (attempt, final fields)), in the
    caller's transaction; the ids of those whose attempt lost its lease (not written)."""
    lost = []
    now = timezone.now()
    for pk, (attempt, fields) in results.items():
        held = model.objects.filter(pk=pk, attempts=attempt, status=model.Status.RUNNING)
        if not held.update(lease_until=None, finished=now, **fields):
            lost.append(pk)
    return lost


def finish(model: JobModel, pk: int, attempt: int, **fields: Any) -> None:
    """Write the job's final state (in the caller's transaction, with its result), or
    raise LeaseLost when attempt `attempt` no longer holds it."""
    held = model.objects.filter(pk=pk, attempts=attempt, status=model.Status.RUNNING)
    if not held.update(lease_until=None, finished=timezone.now(), **fields):
        raise LeaseLost(f"{model.__name__} {pk}: attempt {attempt} lost its lease")


def record(model: JobModel, pk: int, attempt: int, **fields: Any) -> None:
    """Write fields of a job still running (in the caller's transaction, with what they
    describe), or raise LeaseLost when attempt `attempt` no longer holds it."""
    held = model.objects.filter(pk=pk, attempts=attempt, status=model.Status.RUNNING)
    if not held.update(**fields):
        raise LeaseLost(f"{model.__name__} {pk}: attempt {attempt} lost its lease")


class Hold:
    """Held jobs' leases (attempt by job id), renewed by a thread while the work runs
    (`holding`)."""

    def __init__(self, model: JobModel, held: dict[int, int]) -> None:
        self.model, self.held = model, held
        self.stop = threading.Event()
        self.lost = threading.Event()
        """Set once a lease is found taken over: that job's result would be refused."""

    def check(self) -> None:
        """Raise LeaseLost when a lease went to another attempt (call it between steps
        of a long job, so it stops early)."""
        if self.lost.is_set():
            raise LeaseLost(f"{self.model.__name__} {sorted(self.held)}: a lease was lost")

    def _renewed(self) -> bool:
        """Extend the leases still held; False when some were lost (those are let go:
        the others are still renewed)."""
        until = timezone.now() + lease()
        by_attempt: dict[int, list[int]] = {}
        for pk, attempt in self.held.items():
            by_attempt.setdefault(attempt, []).append(pk)
        kept: dict[int, int] = {}
        for attempt, pks in by_attempt.items():
            mine = self.model.objects.filter(
                pk__in=pks, attempts=attempt, status=self.model.Status.RUNNING
            )
            if mine.update(lease_until=until) < len(pks):
                pks = list(mine.values_list("pk", flat=True))
            kept.update(dict.fromkeys(pks, attempt))
        lost = len(kept) < len(self.held)
        self.held = kept
        return not lost

    def renew(self) -> None:
        """Renew every third of the lease; after a failed renewal (a busy database) try
        again each second, so one slow write cannot let the lease run out."""
        every = settings.JOB_LEASE_SECONDS / 3
        wait = every
        try:
            while not self.stop.wait(wait):
                try:
                    _short_busy_wait()
                    held = self._renewed()
                except Exception:
                    logger.warning(
                        "could not renew the lease of %s %s", self.model.__name__, list(self.held)
                    )
                    connection.close()  # a broken connection is opened again next time
                    wait = min(1.0, every)
                    continue
                if not held:
                    self.lost.set()
                if not self.held:
                    return
                wait = every
        finally:
            connection.close()


def _short_busy_wait() -> None:
    # A renewal blocked behind a long write fails after 5 s and is tried again,
    # rather than waiting out SQLite's whole busy timeout while the lease runs out.
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA busy_timeout = 5000")


@contextmanager
def holding(model: JobModel, pk: int, attempt: int) -> Iterator[Hold]:
    """Renew the job's lease while the body runs (a long import holds its job past one
    lease); the Hold says whether it was lost."""
    with holding_all(model, {pk: attempt}) as hold:
        yield hold


@contextmanager
def holding_all(model: JobModel, held: dict[int, int]) -> Iterator[Hold]:
    """`holding` for several jobs at once (attempt by id), with one renewing thread."""
    hold = Hold(model, held)
    first = min(held) if held else 0
    renewer = threading.Thread(target=hold.renew, name=f"lease-{first}", daemon=True)
    renewer.start()
    try:
        yield hold
    finally:
        hold.stop.set()
        renewer.join()


@dataclass(frozen=True, slots=True)
class Reaped:
    """What one pass of `reap` found: ids to send to the workers again, and how many
    jobs it failed for good."""

    imports: list[int]
    cells: list[int]
    failed: int
    tuning_cells: list[int] = field(default_factory=list)


def reap(*, queue_empty: bool, now: datetime | None = None) -> Reaped:
    """Give jobs whose worker was lost back to the queue (or fail them after
    JOB_ATTEMPTS), and, when the broker's queue is empty, the queued jobs whose task
    was lost with its worker. Returns the ids the caller must send again."""
    now = now or timezone.now()
    imports, failed_imports = _reap(ImportJob, now, queue_empty)
    for upload in Upload.objects.filter(job__pk__in=failed_imports):
        saving.do_drop_staged(upload)  # what the lost attempts left unseen
        _shown_anyway(upload)
    cells, failed_cells = _reap(SweepCell, now, queue_empty)
    if failed_cells:
        _finish_sweeps(failed_cells)
    tuning_cells, failed_tuning = _reap(TuningCell, now, queue_empty)
    if failed_tuning:
        _finish_tunings(failed_tuning)
    failed = len(failed_imports) + len(failed_cells) + len(failed_tuning)
    return Reaped(imports, cells, failed, tuning_cells)


def _shown_anyway(upload: Upload) -> None:
    """An import failed by the reaper after its runs were shown (its workers were lost
    while indexing or counting them) imported them: say so, and leave their counts to
    be made later by the periodic derivation (and their text, if not indexed, to
    imports.index_left)."""
    if not Run.objects.filter(upload=upload).exists():
        return
    job = ImportJob.objects.get(upload=upload)
    warnings = derivation.do_give_up(upload, job.error)
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportJob.Status.DONE, error="", warnings=warnings
    )


def _reap(model: JobModel, now: datetime, queue_empty: bool) -> tuple[list[int], list[int]]:
    status = model.Status
    with transaction.atomic():
        # No lease at all: left running before leases existed (migration 0018).
        expired = model.objects.select_for_update().filter(
            Q(lease_until__lt=now) | Q(lease_until__isnull=True), status=status.RUNNING
        )
        rows = list(expired.values_list("pk", "attempts"))
        again = [pk for pk, attempts in rows if attempts < settings.JOB_ATTEMPTS]
        gone = [pk for pk, attempts in rows if attempts >= settings.JOB_ATTEMPTS]
        model.objects.filter(pk__in=again).update(status=status.QUEUED, lease_until=None, sent=now)
        if gone:
            model.objects.filter(pk__in=gone).update(
                status=status.FAILED,
                lease_until=None,
                finished=now,
                error=(
                    f"{WORKER_LOST}: the worker stopped while working on it, "
                    f"{settings.JOB_ATTEMPTS} times"
                ),
            )
        if queue_empty:
            waiting = model.objects.filter(status=status.QUEUED, sent__lt=now - lease())
            lost = list(waiting.values_list("pk", flat=True))
            model.objects.filter(pk__in=lost).update(sent=now)
            again += lost
    for pk in again:
        logger.warning("%s %s: queued again (its worker or its task was lost)", model.__name__, pk)
    for pk in gone:
        logger.warning("%s %s: failed, its worker was lost", model.__name__, pk)
    return again, gone


def _finish_sweeps(cell_ids: list[int]) -> None:
    """Mark finished the sweeps whose last open cells were just failed."""
    open_cells = (SweepCell.Status.QUEUED, SweepCell.Status.RUNNING)
    sweeps = set(SweepCell.objects.filter(pk__in=cell_ids).values_list("sweep", flat=True))
    for sweep_id in sweeps:
        if not SweepCell.objects.filter(sweep=sweep_id, status__in=open_cells).exists():
            Sweep.objects.filter(pk=sweep_id, finished__isnull=True).update(finished=timezone.now())


def _finish_tunings(cell_ids: list[int]) -> None:
    """Mark finished the tunings whose last open cells were just failed."""
    open_cells = (TuningCell.Status.QUEUED, TuningCell.Status.RUNNING)
    found = set(TuningCell.objects.filter(pk__in=cell_ids).values_list("tuning", flat=True))
    for tuning_id in found:
        if not TuningCell.objects.filter(tuning=tuning_id, status__in=open_cells).exists():
            Tuning.objects.filter(pk=tuning_id, finished__isnull=True).update(
                finished=timezone.now()
            )
