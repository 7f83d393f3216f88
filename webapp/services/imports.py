"""Importing logs: keep the raw upload, parse it with the core, and save its runs and
messages (with token counts for every estimator) in one transaction."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.files import File
from django.db import transaction
from django.utils import timezone

from contextsim import model as core
from contextsim import skeleton
from contextsim.estimators import ESTIMATORS, Estimator, content_key, count_message
from contextsim.formats import FormatError, ParsedFile, parse_stream
from contextsim.formats.native import part_to_dict
from webapp.models import Collection, ImportJob, Message, Run, RunSkeleton, Upload, Visibility

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
    try:
        with upload.file.open("rb") as stream:
            parsed = parse_stream(upload.original_name, stream, upload.format_override or None)
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
        job.status, job.format = ImportJob.Status.DONE, parsed.format
        job.warnings = list(parsed.warnings)
    job.finished = timezone.now()
    job.save()
    return job


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
    """Save every run of `parsed`, grouping a main session and its subagents into a
    collection. All or nothing. `estimators` limits the counting (default: all)."""
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
    for group in _groups(saved):
        if len(group) > 1:
            main = next((r for r in group if not r.subagent), group[0])
            collection = Collection.objects.create(
                owner=owner, visibility=visibility, title=main.title
            )
            Run.objects.filter(pk__in=[r.pk for r in group]).update(collection=collection)
            for r in group:
                r.collection = collection
    return saved


def _groups(runs: Iterable[Run]) -> list[list[Run]]:
    by_root: dict[str, list[Run]] = {}
    for run in runs:
        root = run.parent_session_id or run.session_id or run.public_id
        by_root.setdefault(root, []).append(run)
    return list(by_root.values())


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
