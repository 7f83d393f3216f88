"""Importing logs: keep the raw upload, parse it with the core, and save its runs and
messages (with token counts for every estimator) in one transaction."""

from __future__ import annotations

import hashlib
import logging
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files import File
from django.db import transaction
from django.utils import timezone

from contextsim import model as core
from contextsim import skeleton
from contextsim.estimators import ESTIMATORS, Estimator, content_key, count_message
from contextsim.formats import FormatError, ParsedFile, parse_stream
from contextsim.formats.native import part_to_dict
from webapp.models import ImportJob, Message, Run, RunSkeleton, Upload, Visibility
from webapp.services.sessions import join_sessions

BATCH = 500
logger = logging.getLogger(__name__)


def store_upload(
    owner: AbstractBaseUser | None, name: str, stream: IO[bytes], format_override: str = ""
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
    upload.file.save(name.replace("/", "_")[-100:] or "upload", File(stream), save=False)
    with transaction.atomic():
        upload.save()
        return ImportJob.objects.create(upload=upload)


def run_import(job_id: int) -> ImportJob:
    """Parse the job's upload and save its runs; on bad input save none of them and
    record the error on the job. Returns the finished job."""
    job = ImportJob.objects.select_related("upload").get(pk=job_id)
    job.status = ImportJob.Status.RUNNING
    job.save(update_fields=["status"])
    upload = job.upload
    earlier = None if job.again else _imported_before(upload)
    if earlier is not None:
        # The same bytes again: link to what they gave, import nothing twice.
        job.status, job.duplicate_of = ImportJob.Status.DONE, earlier
        job.format, job.finished = earlier.job.format, timezone.now()
        job.save()
        return job
    try:
        parsed = _parse_upload(upload)
        if not parsed.runs:
            raise FormatError(upload.original_name, "", "the file holds no conversation")
        save_parsed(parsed, owner=upload.owner, upload=upload)
    except FormatError as exc:
        job.status, job.error = ImportJob.Status.FAILED, str(exc)
    except Exception:
        # Never leave a job "running" forever: say it failed, keep the details in the log.
        logger.exception("import of upload %s failed", upload.pk)
        job.status = ImportJob.Status.FAILED
        job.error = f"{upload.original_name}: internal error while importing (see the server log)"
    else:
        job.status, job.format = ImportJob.Status.DONE, parsed.format[:30]
        job.warnings = list(parsed.warnings)
    job.finished = timezone.now()
    job.save()
    return job


def _imported_before(upload: Upload) -> Upload | None:
    """The owner's earlier upload of the same bytes whose runs are still there."""
    return (
        Upload.objects.filter(
            owner=upload.owner, sha256=upload.sha256, job__status=ImportJob.Status.DONE
        )
        .exclude(pk=upload.pk)
        .filter(runs__isnull=False)
        .select_related("job")
        .order_by("id")
        .first()
    )


def import_again(job: ImportJob) -> ImportJob:
    """Mark a job that found its file imported before to import it anyway (the person
    asked); the caller runs or queues it."""
    job.again, job.duplicate_of = True, None
    job.status, job.finished = ImportJob.Status.QUEUED, None
    job.save(update_fields=["again", "duplicate_of", "status", "finished"])
    return job


def _parse_upload(upload: Upload) -> ParsedFile:
    """The upload's runs: one file's, or every log file's of a zip (a Claude Code
    project folder with its subagents, say)."""
    fmt = upload.format_override or None
    with upload.file.open("rb") as stream:
        if zipfile.is_zipfile(stream):
            stream.seek(0)
            with zipfile.ZipFile(stream) as archive:
                return _parse_zip(upload.original_name, archive, fmt)
        stream.seek(0)
        return parse_stream(upload.original_name, stream, fmt)


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


@transaction.atomic
def save_parsed(
    parsed: ParsedFile,
    *,
    owner: AbstractBaseUser | None,
    upload: Upload | None = None,
    visibility: str = Visibility.PRIVATE,
    demo_key: str = "",
    estimators: Sequence[str] | None = None,
) -> list[Run]:
    """Save every run of `parsed`, a main session and its subagents in one collection
    with the owner's runs of the same session stored before (services.sessions). All or
    nothing. `estimators` limits the counting (default: all)."""
    saved = [
        save_run(
            run,
            owner=owner,
            upload=upload,
            visibility=visibility,
            demo_key=demo_key,
            estimators=estimators,
        )
        for run in parsed.runs
    ]
    join_sessions(owner, saved)
    for run in saved:
        run.refresh_from_db(fields=["collection"])
    return saved


def save_run(
    run: core.Run,
    *,
    owner: AbstractBaseUser | None,
    upload: Upload | None = None,
    visibility: str = Visibility.PRIVATE,
    demo_key: str = "",
    estimators: Sequence[str] | None = None,
) -> Run:
    """Save one core run and its messages, counting each message's tokens once per
    estimator (all registered ones unless `estimators` names some)."""
    chosen = {n: ESTIMATORS[n] for n in (estimators or ESTIMATORS)}
    measured = [m.usage.context for m in run.messages if m.usage is not None]
    stored = Run.objects.create(
        owner=owner,
        upload=upload,
        visibility=visibility,
        demo_key=demo_key,
        title=_storable(run.title[:300]) or "untitled run",
        format=run.format,
        model=run.model[:120],
        session_id=run.session_id[:200],
        parent_session_id=run.parent_session_id[:200],
        subagent=run.subagent,
        compactions=[
            {"before_message": c.before_message, "pre_tokens": c.pre_tokens, "trigger": c.trigger}
            for c in run.compactions
        ],
        context_window=run.context_window,
        harness_version=run.harness_version[:40],
        compaction_request=run.compaction_request,
        elisions=[
            {"message": e.message, "from_step": e.from_step, "text": _storable(e.text)}
            for e in run.elisions
        ],
        message_count=len(run.messages),
        request_count=core.request_count(run),
        requests_with_usage=len(measured),
        peak_measured_context=max(measured) if measured else None,
        tool_call_count=sum(len(m.tool_calls) for m in run.messages),
    )
    batch: list[Message] = []
    for index, message in enumerate(run.messages):
        batch.append(message_row(stored, index, message, chosen))
        if len(batch) >= BATCH:
            Message.objects.bulk_create(batch)
            batch = []
    Message.objects.bulk_create(batch)
    RunSkeleton.objects.bulk_create(
        RunSkeleton(
            run=stored, estimator=name, data=_storable(skeleton.to_dict(skeleton.build(run, est)))
        )
        for name, est in chosen.items()
    )
    return stored


def message_row(
    run: Run, index: int, message: core.Message, estimators: dict[str, Estimator]
) -> Message:
    usage = message.usage
    return Message(
        run=run,
        index=index,
        role=message.role,
        kind=message.kind,
        parts=[_storable(part_to_dict(p)) for p in message.parts],
        compact_summary=message.compact_summary,
        tool_names=", ".join(c.name for c in message.tool_calls)[:500],
        content_hash=content_key(message),
        counts={name: count_message(message, est) for name, est in estimators.items()},
        usage_input=usage.input_tokens if usage else None,
        usage_cache_read=usage.cache_read if usage else None,
        usage_cache_write=usage.cache_write if usage else None,
        usage_output=usage.output_tokens if usage else None,
        source=message.source[:200],
        timestamp=(
            datetime.fromtimestamp(message.time, tz=UTC) if message.time is not None else None
        ),
    )


def _storable(value: Any) -> Any:
    """`value` with NUL characters replaced by U+FFFD: PostgreSQL cannot store NUL in
    text or JSON, and logs of binary tool output do contain it. Counts are taken from
    the original text."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {k: _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(v) for v in value]
    return value
