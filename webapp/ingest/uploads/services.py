"""Importing logs: keep the raw upload, then, as a job (webapp.jobs.services), parse it
with the core and save its runs (webapp.store.actions.saving)."""

from __future__ import annotations

import hashlib
import logging
import zipfile
from collections.abc import Iterator
from typing import IO

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files import File
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from contextsim import model as core
from contextsim.ingest.base import FileEnd, FormatError, ParsedFile, Restart, RunPiece, whole_pieces
from contextsim.ingest.detect import parse_stream, pieces_of
from webapp.jobs import services as jobs
from webapp.models import ImportJob, Run, Upload
from webapp.runtime import checkpoints
from webapp.store.actions import derivation, saving, twins
from webapp.store.actions import rows as message_rows

logger = logging.getLogger(__name__)


def store_upload(
    owner: User | None, name: str, stream: IO[bytes], format_override: str = ""
) -> ImportJob:
    """Keep the file as received and queue its import; returns the job."""
    digest = hashlib.sha256()
    size = 0
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        digest.update(chunk)
        size += len(chunk)
    stream.seek(0)
    upload = Upload(
        owner=owner,
        original_name=name[:300],
        size=size,
        sha256=digest.hexdigest(),
        format_override=format_override,
    )
    storage = upload.file.storage
    # The name it is written under, known before: a write that fails (a full disk) leaves
    # a part of the file, which is removed, not left behind.
    field = upload.file.field
    target = storage.get_available_name(
        field.generate_filename(upload, name.replace("/", "_")[-100:] or "upload"),
        max_length=field.max_length,
    )
    try:
        upload.file.name = storage.save(target, File(stream))
        with transaction.atomic():
            upload.save()
            return ImportJob.objects.create(upload=upload)
    except BaseException:
        if storage.exists(target):
            storage.delete(target)
        raise


ARCHIVE_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"\x1f\x8b")
"""How a zip (or an empty one) and a gzip file begin."""


def in_request(upload: Upload, limit: int) -> bool:
    """Whether the upload may be imported while its uploader waits: a file of at most
    `limit` bytes that is not an archive (a small zip may unpack to hundreds of times its
    size: a worker unpacks it, within its bounds, never the web server)."""
    if upload.size > limit:
        return False
    with upload.file.open("rb") as stream:
        head = stream.read(4)
    return not head.startswith(ARCHIVE_MAGIC)


def run_import(job_id: int, *, count_now: bool = False) -> ImportJob:
    """Take the job (webapp.jobs.services), parse its upload and save its runs; on bad
    input save none of them and record the error on the job. The runs are written
    unseen a batch at a time (webapp.store.actions.saving) and shown in the transaction that
    records the job done, so a job taken up again after its worker was lost saves them
    once. A job not queued (done, or held by a live worker) is left as it is. `count_now`
    (a small file imported while its uploader waits) counts every estimator as the runs
    are written, rather than reading them back to count them. Returns the job."""
    attempt = jobs.claim(ImportJob, job_id)
    if attempt is not None:
        with jobs.holding(ImportJob, job_id, attempt) as hold:
            job = ImportJob.objects.select_related("upload").get(pk=job_id)
            try:
                _import(job, attempt, hold, count_now)
            except jobs.LeaseLost:
                logger.warning("import job %s: another attempt took it over", job_id)
    return ImportJob.objects.select_related("upload", "duplicate_of").get(pk=job_id)


def _import(job: ImportJob, attempt: int, hold: jobs.Hold, count_now: bool = False) -> None:
    upload = job.upload
    staged: list[Run] = []
    shown: list[Run] = []
    try:
        # Shown by an earlier attempt whose worker was lost while counting: count on.
        shown = list(Run.objects.filter(upload=upload).order_by("pk"))
        if not shown:
            saving.do_drop_staged(upload)  # what an attempt whose worker was lost left
            earlier = None if job.again else _imported_before(upload)
            if earlier is not None:
                # The same bytes again: link to what they gave, import nothing twice.
                jobs.finish(
                    ImportJob,
                    job.pk,
                    attempt,
                    status=ImportJob.Status.DONE,
                    duplicate_of=earlier,
                    format=earlier.job.format,
                )
                return
            with checkpoints.beside():
                shown = _write(job, attempt, hold, staged, count_now)
        _index(job, shown, hold)
        _count(job, shown, hold)
        jobs.finish(ImportJob, job.pk, attempt, status=ImportJob.Status.DONE)
    except jobs.LeaseLost:
        saving.do_drop_runs(staged)
        raise
    except FormatError as exc:
        saving.do_drop_runs(staged)  # bad input found while its first pieces were written
        jobs.finish(ImportJob, job.pk, attempt, status=ImportJob.Status.FAILED, error=str(exc))
    except Exception:
        # Never leave a job "running" forever: say it failed, keep the details in the log.
        logger.exception("import of upload %s failed", upload.pk)
        if shown:
            # Shown already, and browsable: counts (and maybe the search index) are
            # missing, made when first needed (and by index_left).
            _counts_left(job, attempt, upload)
            return
        saving.do_drop_runs(staged)
        error = f"{upload.original_name}: internal error while importing (see the server log)"
        jobs.finish(ImportJob, job.pk, attempt, status=ImportJob.Status.FAILED, error=error)


def _counts_left(job: ImportJob, attempt: int, upload: Upload) -> None:
    """The import of runs shown that failed while indexing or counting them: done,
    saying so; their skeletons for the estimators left are built when first shown."""
    warnings = derivation.do_give_up(upload, "the import stopped after its runs were shown")
    jobs.finish(ImportJob, job.pk, attempt, status=ImportJob.Status.DONE, warnings=warnings)


def _write(
    job: ImportJob, attempt: int, hold: jobs.Hold, staged: list[Run], count_now: bool = False
) -> list[Run]:
    """Read the upload a piece at a time (contextsim.ingest.detect.pieces_of: a big native
    document is parsed as it is written, never held whole), write its runs counted by
    the estimator they are first shown with (staged: unseen, saving.do_stage_run), and show
    them, with the job's format and warnings, in one short transaction: from then on
    they are browsable, while their text is indexed (`_index`) and their other counts
    are made (`_count`)."""
    upload = job.upload
    _progress(job, "reading")
    fillings: dict[int, saving.Filling] = {}
    end: FileEnd | None = None
    written = 0
    for piece in _pieces(upload):
        if isinstance(piece, FileEnd):
            end = piece
            continue
        if isinstance(piece, Restart):  # the file is handed over again, whole
            saving.do_drop_runs(staged)
            staged.clear()
            fillings.clear()
            written = 0
            continue
        hold.check()
        filling = fillings.get(piece.run)
        if filling is None:
            staged.append(
                saving.do_stage_run(owner=upload.owner, upload=upload, count_now=count_now)
            )
            filling = fillings[piece.run] = saving.Filling(staged[-1])
        filling.add(piece.messages)
        written += len(piece.messages)
        _progress(job, "writing", written, 0)
    if end is None or not end.runs:
        raise FormatError(upload.original_name, "", "the file holds no conversation")
    _progress(job, "finishing", written, written)
    filled = []
    for number, facts in end.runs:
        filling = fillings.get(number)
        if filling is None:  # a run without messages
            staged.append(
                saving.do_stage_run(owner=upload.owner, upload=upload, count_now=count_now)
            )
            filling = saving.Filling(staged[-1])
        filling.finish(facts)
        filled.append(filling.stored)
    # One session is one run: a copy of one imported before is recognised, not shown.
    new, recognised = (filled, []) if job.again else twins.do_settle_twins(filled)
    told = [r.describe(upload.original_name) for r in recognised]
    found = {"format": end.format[:30], "warnings": [*end.warnings, *told]}
    with transaction.atomic():
        jobs.record(
            ImportJob,
            job.pk,
            attempt,
            stage="indexing",
            messages_written=0,
            shown=timezone.now(),
            **found,
        )
        job.recognised.add(*(r.stored for r in recognised))
        return saving.do_publish_runs(new, upload.owner)


def _index(job: ImportJob, shown: list[Run], hold: jobs.Hold) -> None:
    """Index the text of the shown runs for search (message_rows.index_run), saying how
    far it is on the job (stage "indexing": selectors.search says which runs are not
    searched yet)."""
    total = sum(run.message_count for run in shown)
    before = 0
    for run in shown:

        def indexed(n: int, before: int = before) -> None:
            hold.check()
            _progress(job, "indexing", before + n, total)

        indexed(0)
        message_rows.index_run(run.pk, indexed)
        before += run.message_count


def index_left() -> int:
    """Index the text of the runs of one import that ended before it was (its job done
    in stage "indexing": indexing failed, or its workers were lost while it ran), as
    the reaper passes (webapp.tasks.reap_jobs); returns how many runs were indexed."""
    job = ImportJob.objects.filter(status=ImportJob.Status.DONE, stage="indexing").first()
    if job is None:
        return 0
    runs = list(Run.objects.filter(upload_id=job.upload_id).values_list("pk", flat=True))
    for run_id in runs:
        message_rows.index_run(run_id)
    ImportJob.objects.filter(pk=job.pk, stage="indexing").update(stage="")
    return len(runs)


def _count(job: ImportJob, shown: list[Run], hold: jobs.Hold) -> None:
    """Count the shown runs by the slow estimators (webapp.store.actions.derivation), saying
    how far it is on the job."""
    total = sum(run.message_count for run in shown if run.counting)
    _progress(job, "counting", 0, total)
    before = 0
    for run in shown:
        if not run.counting:
            continue

        def counted(n: int, before: int = before) -> None:
            hold.check()
            _progress(job, "counting", before + n, total)

        derivation.do_count_rest(run, counted)
        before += run.message_count


def _progress(job: ImportJob, stage: str, written: int = 0, total: int = 0) -> None:
    """Say on the job how far it is (the upload page polls it)."""
    ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.RUNNING).update(
        stage=stage, messages_written=written, messages_total=total
    )


def _imported_before(upload: Upload) -> Upload | None:
    """The owner's earlier upload of the same bytes whose runs are still there."""
    return (
        Upload.objects.filter(
            owner=upload.owner, sha256=upload.sha256, job__status=ImportJob.Status.DONE
        )
        .exclude(pk=upload.pk)
        .filter(runs__ready=True)
        .select_related("job")
        .order_by("id")
        .first()
    )


def import_again(job: ImportJob) -> ImportJob:
    """Mark a job that found its file imported before (or a new one) to import it
    anyway (the person asked); the caller runs or queues it. A job already taken up
    again (a second click) is left as it is."""
    waiting = Q(status=ImportJob.Status.QUEUED, attempts=0)
    linked = Q(status=ImportJob.Status.DONE, duplicate_of__isnull=False)
    ImportJob.objects.filter(waiting | linked, pk=job.pk).update(
        again=True,
        duplicate_of=None,
        status=ImportJob.Status.QUEUED,
        finished=None,
        attempts=0,
        sent=timezone.now(),
    )
    job.refresh_from_db()
    return job


def _pieces(upload: Upload) -> Iterator[RunPiece | FileEnd | Restart]:
    """The upload's runs a piece at a time: one file's, or every log file's of a zip (a
    Claude Code project folder with its subagents, say)."""
    fmt = upload.format_override or None
    with upload.file.open("rb") as stream:
        if zipfile.is_zipfile(stream):
            stream.seek(0)
            with zipfile.ZipFile(stream) as archive:
                yield from whole_pieces(_parse_zip(upload.original_name, archive, fmt))
            return
        stream.seek(0)
        yield from pieces_of(upload.original_name, stream, fmt)


ZIP_MEMBERS = 2_000
"""Files a zip may hold, so that one upload cannot queue an unbounded import."""
LOG_SUFFIXES = (".jsonl", ".json", ".traj", ".ndjson")


def _parse_zip(name: str, archive: zipfile.ZipFile, fmt: str | None) -> ParsedFile:
    """Every log file of the zip parsed (all or nothing: a bad one fails the upload,
    named by its path in the zip); other files are left out with a warning."""
    members = [i for i in archive.infolist() if not i.is_dir()]
    logs = [i for i in members if _is_log(i.filename)]
    if len(members) > ZIP_MEMBERS:
        raise FormatError(
            name, "", f"the zip holds {len(members):,} files; at most {ZIP_MEMBERS:,}"
        )
    unpacked = sum(i.file_size for i in logs)
    if unpacked > settings.MAX_UPLOAD_BYTES:
        limit = settings.MAX_UPLOAD_BYTES
        raise FormatError(name, "", f"the zip unpacks to {unpacked:,} bytes; at most {limit:,}")
    if not logs:
        raise FormatError(name, "", f"the zip holds no log file ({', '.join(LOG_SUFFIXES)})")
    runs: list[core.Run] = []
    warnings: list[str] = []
    formats: list[str] = []
    for info in sorted(logs, key=lambda i: i.filename):
        with archive.open(info) as member:
            parsed = parse_stream(f"{name}/{info.filename}", member, fmt)
        runs.extend(parsed.runs)
        warnings.extend(parsed.warnings)
        formats.append(parsed.format)
    skipped = len(members) - len(logs)
    if skipped:
        warnings.append(f"{name}: {skipped} file(s) that are not logs left out")
    return ParsedFile(", ".join(dict.fromkeys(formats)), tuple(runs), tuple(warnings))


def _is_log(path: str) -> bool:
    base = path.rsplit("/", 1)[-1]
    hidden = base.startswith(".") or path.startswith("__MACOSX/")
    return not hidden and base.lower().endswith(LOG_SUFFIXES)
