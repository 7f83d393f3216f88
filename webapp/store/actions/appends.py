"""Live runs: create a run that will grow, append messages to it (or replace its tail,
when the last response of a log was still being written), and keep a stored run in step
with a log file that is still growing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, F, Max, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from contextsim import model as core
from contextsim.counting.estimators import ESTIMATORS, SHOWN_FIRST, CountMemo, content_key
from contextsim.ingest.base import ParsedFile
from contextsim.ingest.detect import parse_path
from webapp.models import AppendReceipt, Message, Run, Visibility
from webapp.store.actions.rows import (
    LIVE_COUNTED,
    MessageRow,
    insert_messages,
    message_row,
    storable,
)
from webapp.store.actions.saving import (
    NO_FIGURES,
    Prepared,
    figures_after,
    prepare,
    rejections_of,
    write,
)
from webapp.store.actions.sessions import do_join_sessions


def do_create_live_run(
    owner: User,
    run: core.Run,
    stream_key: str = "",
    prepared: Prepared | None = None,
    counting: Sequence[str] = (),
    machine: str = "",
) -> Run:
    """Save `run` (its header and any first messages) as a private run that will grow;
    `stream_key` names the log file and run it follows, if any. Its messages are counted
    before the write transaction (`prepared`: counted by the caller, who may hold a
    transaction of its own: then it must count first), by every estimator but those of
    `counting`, which a job counts once the run is idle (derivation.do_derive)."""
    prepared = prepared if prepared is not None else prepare(run)
    with transaction.atomic():
        stored = write(prepared, owner=owner, visibility=Visibility.PRIVATE, counting=counting)
        Run.objects.filter(pk=stored.pk).update(
            last_append=timezone.now(), stream_key=stream_key[:600], machine=machine[:100]
        )
    stored.refresh_from_db()
    return stored


def do_create_live_runs(owner: User, runs: Sequence[core.Run]) -> list[Run]:
    """Save several runs that will grow (all or nothing, counted before the write
    transaction), a subagent in one collection with its session's run."""
    prepared = [prepare(run) for run in runs]
    with transaction.atomic():
        saved = [do_create_live_run(owner, p.run, prepared=p) for p in prepared]
        do_join_sessions(owner, saved)
    for run in saved:
        run.refresh_from_db(fields=["collection"])
    return saved


class StaleAppend(ValueError):
    """A replacing append made against a run that has changed since the client looked."""

    def __init__(self, revision: int, messages: int) -> None:
        super().__init__(
            f"the run changed since: it is at revision {revision} with {messages} messages; "
            "read it again and resend"
        )
        self.revision, self.messages = revision, messages


def do_append(
    run: Run,
    messages: Sequence[core.Message],
    start: int | None,
    key: str,
    answer: Callable[[Run], dict[str, Any]],
    if_revision: int | None = None,
) -> dict[str, Any]:
    """Append (see do_append_messages) unless an append with this Idempotency-Key was made
    already: then its answer is returned and nothing changes. A replacing append (a
    `start`) must say the revision it was made against (`if_revision`); a stale one
    raises StaleAppend and changes nothing. Returns the answer, kept with the key."""
    if key:
        # A retry seen before is answered without counting anything (receipts are
        # never changed once written).
        seen = AppendReceipt.objects.filter(run=run, key=key).first()
        if seen is not None:
            answered: dict[str, Any] = seen.answer
            return answered
    rows = live_rows(messages)  # counted before the write lock is taken
    with transaction.atomic():
        locked = Run.objects.select_for_update().only(*LOCKED).filter(pk=run.pk).first()
        if locked is None:
            raise Run.DoesNotExist(f"run {run.pk} is gone")
        if key:
            found = AppendReceipt.objects.filter(run=locked, key=key).first()
            if found is not None:
                kept: dict[str, Any] = found.answer
                return kept
        if if_revision is not None and if_revision != locked.revision:
            raise StaleAppend(locked.revision, locked.message_count)
        _append_locked(locked, messages, start, rows)
        body = answer(locked)
        if key:
            AppendReceipt.objects.create(run=locked, key=key, answer=body)
        return body


LOCKED = (
    "id",
    "public_id",
    "title",
    "format",
    "model",
    "created",
    "message_count",
    "revision",
    "last_append",
    *NO_FIGURES,
)
"""What an append reads of its run under the lock: what it changes, and what its
answer says."""


def live_rows(messages: Sequence[core.Message], memo: CountMemo | None = None) -> list[MessageRow]:
    """The rows of `messages`, counted as a live run's are (message_rows.LIVE_COUNTED),
    through `memo` when given (counts made before a write transaction began)."""
    return [message_row(m, LIVE_COUNTED, memo) for m in messages]


def do_append_messages(
    run: Run,
    messages: Sequence[core.Message],
    start: int | None = None,
    rows: list[MessageRow] | None = None,
) -> Run:
    """Store `messages` from position `start` on (default: after the last one),
    replacing any stored message from there: all or nothing. Counts every new message
    as a live run's are (message_rows.LIVE_COUNTED), before the write transaction, unless
    the caller counted them (`rows`: a caller in a transaction of its own must); skeletons
    are rebuilt when next needed. Returns the run, updated.

    Requests before `start` are unchanged, so permalinks to them stay valid."""
    rows = live_rows(messages) if rows is None else rows  # counted before the write lock
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        _append_locked(locked, messages, start, rows)
    run.refresh_from_db()
    return run


def _append_locked(
    locked: Run, messages: Sequence[core.Message], start: int | None, rows: list[MessageRow]
) -> None:
    """do_append_messages' work, in the caller's transaction on the run it locked."""
    end = locked.message_count
    start = end if start is None else start
    if not 0 <= start <= end:
        raise ValueError(f"start: expected a position from 0 to {end}, got {start}")
    dropped_calls = 0
    if start < end:  # nothing to read or delete when only adding
        removed = Message.objects.filter(run=locked, index__gte=start)
        parts = removed.values_list("parts", flat=True)
        dropped_calls = sum(_calls(p) for p in parts)
        removed.delete()
    insert_messages(locked.pk, start, rows)
    if start == end:
        # Messages only added at the end: figures from the run's own, and a skeleton
        # is extended, not built again.
        changed = figures_after({k: getattr(locked, k) for k in NO_FIGURES}, messages)
        for name, value in changed.items():
            setattr(locked, name, value)
        # The run is locked: its revision is the one read.
        locked.message_count, locked.revision = end + len(messages), locked.revision + 1
        locked.last_append = timezone.now()
        fields = ("message_count", "revision", "last_append", *changed)
        Run.objects.filter(pk=locked.pk).update(**{f: getattr(locked, f) for f in fields})
        return
    Run.objects.filter(pk=locked.pk).update(
        **_figures(locked),
        tool_call_count=F("tool_call_count")
        - dropped_calls
        + sum(len(m.tool_calls) for m in messages),
        rewritten=F("revision") + 1,
        message_count=start + len(messages),
        revision=F("revision") + 1,
        last_append=timezone.now(),
    )
    locked.refresh_from_db(fields=[f for f in LOCKED if f != "id"])


def _calls(parts: list[dict[str, object]]) -> int:
    return sum(1 for p in parts if p.get("type") == "tool_call")


def _figures(run: Run) -> dict[str, object]:
    rows = Message.objects.filter(run=run)
    context = F("usage_input") + Coalesce("usage_cache_read", 0) + Coalesce("usage_cache_write", 0)
    found = rows.aggregate(
        requests=Count("pk", filter=Q(role="assistant")),
        measured=Count("pk", filter=Q(usage_input__isnull=False)),
        peak=Max(context),
    )
    return {
        "request_count": found["requests"],
        "requests_with_usage": found["measured"],
        "peak_measured_context": found["peak"],
    }


def do_sync_file(
    owner: User, path: Path, known: dict[str, Run], format: str | None = None
) -> list[tuple[Run, int]]:
    """Bring the stored runs of a growing log file in step with it: a run seen for the
    first time is created; a known one gets its new messages, the tail that changed (a
    response still being written) replaced, and its title, model and compactions as the
    file now says. A run is known by the file's path and its session id (or position in
    the file), never by its title: two files may well start alike. `known` caches that
    key's stored run and is updated. Returns (run, messages added or replaced) for every
    run that changed."""
    parsed: ParsedFile = parse_path(str(path), format)
    changed = []
    for position, run in enumerate(parsed.runs):
        key = f"{path.resolve()}#{run.session_id or position}"
        stored = known.get(key) or Run.objects.filter(owner=owner, stream_key=key).first()
        stored, count = do_sync_run(owner, key, run, stored)
        known[key] = stored
        if count is not None:
            changed.append((stored, count))
    return changed


def do_open_stream(owner: User, key: str, machine: str, run: core.Run) -> tuple[Run, bool]:
    """The owner's run that follows stream `key` sent from `machine` (another machine's
    watcher: webapp.ingest.live.views.create_runs), and whether it was created now.
    Created from `run` (its header and first messages, shown once counted by the fast
    estimator, the others counted later) when none follows it; else only its title,
    model and compactions are brought in step with `run`: its messages are the sender's
    to append from its count, so a retry or a restart changes nothing twice."""
    key = f"{machine}:{key}"[:600]
    stored = Run.objects.filter(owner=owner, stream_key=key).first()
    if stored is not None:
        _update_header(stored, run)
        return stored, False
    prepared = prepare(run, [SHOWN_FIRST])
    later = [n for n in ESTIMATORS if n != SHOWN_FIRST]
    stored = do_create_live_run(owner, run, key, prepared, counting=later, machine=machine)
    do_join_sessions(owner, [stored])
    return stored, True


def do_sync_run(
    owner: User,
    key: str,
    run: core.Run,
    stored: Run | None,
    synced: Sequence[core.Message] | None = None,
    memo: CountMemo | None = None,
) -> tuple[Run, int | None]:
    """Bring `stored`, the live run that follows `key`, in step with `run` as its source
    now says: created (private, owned by `owner`, joined to its session) when None;
    else its title, model and compactions updated and its messages replaced from the
    first that differs. `synced`, when the caller knows it, is what `stored` holds (the
    messages of the run it was last brought in step with, unchanged since): then the
    stored messages are not read. Returns the stored run and how many messages were
    added or replaced (None when nothing changed). `memo`: counts made before the
    caller's transaction, which the new messages' rows are counted through."""
    if stored is None:
        # A file read for the first time may be a long history's: it is shown once
        # counted by the fast estimator; the others are counted later, in the background.
        prepared = prepare(run, [SHOWN_FIRST], memo)
        later = [n for n in ESTIMATORS if n != SHOWN_FIRST]
        stored = do_create_live_run(owner, run, key, prepared, counting=later)
        do_join_sessions(owner, [stored])
        return stored, len(run.messages)
    _update_header(stored, run)
    start = _first_difference(stored, run) if synced is None else first_change(synced, run.messages)
    if start < len(run.messages) or start < stored.message_count:
        tail = run.messages[start:]
        do_append_messages(stored, tail, start, live_rows(tail, memo))
        return stored, len(run.messages) - start
    return stored, None


def header_of(stored: Run, run: core.Run) -> dict[str, Any]:
    """The title, model, compactions and rejections `stored` should have once in step
    with `run` (a run whose source names no title or model keeps its own)."""
    return {
        "title": storable(run.title[:300]) or stored.title,
        "model": storable(run.model[:120]) or stored.model,
        "rejections": rejections_of(run),
        "compactions": [
            {
                "before_message": c.before_message,
                "pre_tokens": c.pre_tokens,
                "trigger": storable(c.trigger),
            }
            for c in run.compactions
        ],
    }


def _update_header(stored: Run, run: core.Run) -> None:
    header = header_of(stored, run)
    if all(getattr(stored, k) == v for k, v in header.items()):
        return
    with transaction.atomic():
        rows = Run.objects.filter(pk=stored.pk)
        rows.update(**header)
        if stored.compactions != header["compactions"]:
            # Compactions are part of the skeleton: a new revision, built afresh.
            rows.update(revision=F("revision") + 1, rewritten=F("revision") + 1)
    stored.refresh_from_db(fields=["title", "model", "compactions", "rejections", "revision"])


def _first_difference(stored: Run, run: core.Run) -> int:
    """The first position where the stored messages and `run`'s differ: in role and
    parts, measured usage or time (a call's usage can arrive after its message, as when
    a later span that repeats the message is received first)."""
    stored_keys = (
        Message.objects.filter(run=stored)
        .order_by("index")
        .values_list("content_hash", *USAGE_FIELDS, "timestamp")
    )
    count = 0
    for i, (old, new) in enumerate(zip(stored_keys, run.messages, strict=False)):
        if old != _key(new):
            return i
        count = i + 1
    return count


def first_change(old: Sequence[core.Message], new: Sequence[core.Message]) -> int:
    """The first position where `old` and `new` differ as _first_difference compares
    them (the same message object is the same without looking)."""
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if a is not b and _key(a) != _key(b):
            return i
    return min(len(old), len(new))


USAGE_FIELDS = (
    "usage_input",
    "usage_cache_read",
    "usage_cache_write",
    "usage_output",
    "usage_cache_write_1h",
    "usage_model",
)


def _key(message: core.Message) -> tuple[object, ...]:
    """What _first_difference compares of a message, as its row stores it."""
    usage = message.usage
    counts = (
        (
            usage.input_tokens,
            usage.cache_read,
            usage.cache_write,
            usage.output_tokens,
            usage.cache_write_1h or None,
            usage.model[:200] or None,
        )
        if usage
        else (None,) * 6
    )
    time = None if message.time is None else datetime.fromtimestamp(message.time, tz=UTC)
    return (content_key(message), *counts, time)
