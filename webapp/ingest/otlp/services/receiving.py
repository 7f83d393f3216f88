"""OpenTelemetry spans received over OTLP/HTTP: each model call span is stored once per
owner, and the live run of its conversation is brought in step with every call stored
(the file importer's mapping, contextsim.systems.otel.spans, read both ways)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F

from contextsim import model as core
from contextsim.counting.estimators import CountMemo, content_key
from contextsim.ingest.base import FormatError
from contextsim.systems.otel.spans import BODY, SpanCall, calls_of
from webapp.ingest.otlp.services import events as span_events
from webapp.ingest.otlp.services import follow as follow
from webapp.ingest.otlp.services import groups as store
from webapp.ingest.otlp.services import parents as span_parents
from webapp.models import ReceivedSpan, Run, SpanGroup
from webapp.store.actions.appends import do_sync_run, first_change, header_of
from webapp.store.actions.batches import Growth, do_create_runs, do_grow_runs
from webapp.store.actions.rows import LIVE_COUNTED, MessageRow, message_row, update_rows

EMPTY: Mapping[tuple[str, str], bytes] = {}


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a batch of spans did: model call spans stored (new ones only), the reason
    for each one rejected, and the live runs that changed."""

    stored: int
    rejected: tuple[str, ...]
    runs: tuple[Run, ...]


def receive_export(
    owner: User, export: Any, serialized: Mapping[tuple[str, str], bytes] = EMPTY
) -> Receipt:
    """Store the model call spans of an OTLP JSON export (ids in hex) for `owner` and
    bring the live run of every conversation they belong to in step, all in one
    transaction: the spans of a conversation whose calls cannot be put together are
    rejected (named in the receipt) and the others kept; a failure of the database
    leaves nothing half saved. Spans that are not model calls are skipped. Raises
    FormatError when `export` is not an OTLP export at all. `serialized`: the spans
    as a protobuf body held them, by (trace id, span id) in hex (kept instead of
    their JSON)."""
    groups: dict[str, list[SpanCall]] = defaultdict(list)
    moved: set[str] = set()
    memo = _precounted(export)
    try:
        with transaction.atomic():
            # Events received as log records are read with their spans; the owner's
            # lock keeps a logs batch from storing one between that and the spans.
            lock_owner(owner)
            ids = span_events.span_ids(export)
            export = span_events.with_events(export, span_events.events_of(owner, ids))
            found = calls_of(export, inputs=follow.INPUTS)
            rejected = list(found.rejected)
            for call in span_parents.joined(owner, found.calls):
                problem = _unstorable(call)
                if problem:
                    rejected.append(problem)
                else:
                    groups[call.group].append(call)
            moved = span_parents.adopt(owner, found.named)
            for key in moved:  # their stored calls changed: read again
                follow.FOLLOWED.pop((owner.pk, key), None)
            stored, runs, planned = (
                _receive(owner, groups, rejected, serialized, memo) if groups else (0, [], set())
            )
            runs += _resync_groups(owner, moved - planned, memo)
    except BaseException:
        # What this process followed may be ahead of what the rollback leaves stored.
        for key in groups.keys() | moved:
            follow.FOLLOWED.pop((owner.pk, key), None)
        raise
    return Receipt(stored, tuple(rejected), tuple(runs))


def _precounted(export: Any) -> CountMemo:
    """The export's messages counted as a live run's are, before the write transaction:
    the rows written under its lock find their counts here (an export that does not
    read counts nothing: the transaction says why)."""
    memo = CountMemo()
    try:
        found = calls_of(export)
    except FormatError:
        return memo
    for call in found.calls:
        exchange = call.exchange
        reply = () if exchange.response is None else (exchange.response,)
        for message in (*exchange.request, *reply):
            key = content_key(message)
            for estimator in LIVE_COUNTED.values():
                memo.count(message, estimator, key)
    return memo


def lock_owner(owner: User) -> None:
    """Take the owner's lock on what it receives over OTLP (spans and events), for the
    rest of the transaction."""
    # FOR NO KEY UPDATE: rows that refer to the owner (its runs, tokens) are not held
    # up by it on PostgreSQL, as FOR UPDATE would hold them until commit.
    model = type(owner)
    rows = model._default_manager.select_for_update(no_key=True).filter(pk=owner.pk)
    list(rows.values_list("pk"))


def resync(owner: User, ids: set[tuple[str, str]]) -> list[Run]:
    """Bring in step the runs of the groups whose stored spans `ids` ((trace id, span
    id)) gained events since they were read (in the caller's transaction, holding the
    owner's lock): their calls are read again from what is stored. Returns the runs
    that changed."""
    traces = sorted({t for t, _ in ids})
    keys: set[str] = set()
    for first in range(0, len(traces), store.CHUNK):
        rows = ReceivedSpan.objects.filter(
            owner=owner, trace_id__in=traces[first : first + store.CHUNK]
        )
        keys.update(
            k for t, s, k in rows.values_list("trace_id", "span_id", "group__key") if (t, s) in ids
        )
    return _resync_groups(owner, keys)


def _resync_groups(owner: User, keys: set[str], memo: CountMemo | None = None) -> list[Run]:
    """Bring the runs of the groups `keys` in step with what they store, read again; a
    group left with no span (its calls moved to their conversation's) is deleted with
    its run. Returns the runs that changed."""
    if not keys:
        return []
    plans = []
    for key, group in store.locked_groups(owner, sorted(keys)).items():
        follow.FOLLOWED.pop((owner.pk, key), None)
        try:
            calls = follow.stored_calls(owner, group)
        except FormatError:
            continue  # its spans and events do not go together: the run is left as it was
        if not calls:
            if group.run_id is not None:
                Run.objects.filter(pk=group.run_id).delete()
            SpanGroup.objects.filter(pk=group.pk).delete()
            continue
        followed = follow.Followed(follow.conversation_of(group, calls))
        plans.append(Plan(group, [], followed, followed.conversation.run(BODY, None), None))
    return _apply(owner, plans, memo)


def _unstorable(call: SpanCall) -> str:
    """Why the call's span cannot be kept ('' when it can)."""
    if not store.TRACE_ID.fullmatch(call.trace_id):
        return f"span {call.span_id or '?'}: traceId: expected 32 hex digits, got {call.trace_id!r}"
    if not store.SPAN_ID.fullmatch(call.span_id):
        return f"span {call.span_id or '?'}: spanId: expected 16 hex digits"
    if len(call.group) > store.KEY_CHARS:
        return f"span {call.span_id}: conversation id: longer than {store.KEY_CHARS} characters"
    return ""


def _receive(
    owner: User,
    groups: dict[str, list[SpanCall]],
    rejected: list[str],
    serialized: Mapping[tuple[str, str], bytes],
    memo: CountMemo | None = None,
) -> tuple[int, list[Run], set[str]]:
    """Store the calls not stored before and bring their groups' runs in step (in the
    caller's transaction). Returns how many calls were new, the runs that changed and
    the keys of the groups brought in step."""
    locked = store.locked_groups(owner, list(groups))
    seen = store.stored_ids(owner, [c for calls in groups.values() for c in calls])
    plans = []
    for key, calls in groups.items():
        new = store.unseen(calls, seen)
        if not new:
            continue
        try:
            plans.append(_plan(owner, locked[key], new))
        except FormatError as error:
            rejected += [f"span {c.span_id}: {error.where}: {error.problem}" for c in new]
    store.insert_spans(
        [
            store.span_row(owner, p.group, c, serialized.get((c.trace_id, c.span_id)))
            for p in plans
            for c in p.new
        ]
    )
    runs = _apply(owner, plans, memo)
    return sum(len(p.new) for p in plans), runs, {p.group.key for p in plans}


def _apply(owner: User, plans: list[Plan], memo: CountMemo | None = None) -> list[Run]:
    """Bring the planned groups' runs in step, a new version of each group (what
    another process followed of it is stale). Returns the runs that changed."""
    SpanGroup.objects.filter(pk__in=[p.group.pk for p in plans]).update(version=F("version") + 1)
    runs = _bring_in_step(owner, plans, memo)
    for plan in plans:
        _keep_followed(owner, plan)
    return runs


@dataclass(slots=True)
class Plan:
    """One group's new calls (start order), what this process follows of it once they
    are added, the run it now makes, and the messages its stored run holds when known
    without reading them (None: read them)."""

    group: SpanGroup
    new: list[SpanCall]
    followed: follow.Followed
    run: core.Run
    synced: tuple[core.Message, ...] | None


def _plan(owner: User, group: SpanGroup, new: list[SpanCall]) -> Plan:
    """Add the group's `new` calls to what this process followed of it when it
    followed the group up to what is stored and they start no earlier than the last
    one; otherwise put every stored call and the new ones together again (each call's
    messages are read once either way)."""
    followed = follow.FOLLOWED.pop((owner.pk, group.key), None)
    if followed is not None and followed.continues(group.version, group.run, new[0].start):
        for call in new:
            followed.conversation.add(call)
        synced: tuple[core.Message, ...] | None = followed.messages
    else:
        # A group's first calls are all there is: nothing stored to read again.
        stored = follow.stored_calls(owner, group) if group.version else []
        calls = sorted([*stored, *new], key=lambda c: c.start)  # stable: stored first
        followed, synced = follow.Followed(follow.conversation_of(group, calls)), None
    return Plan(group, new, followed, followed.conversation.run(BODY, None), synced)


def _bring_in_step(owner: User, plans: list[Plan], memo: CountMemo | None) -> list[Run]:
    """Bring every planned group's run in step: new runs created together, runs that
    only grew appended together, any other change (a tail replaced, a new title or
    compaction, a run this process did not follow) one run at a time. Returns the
    runs that changed."""
    new = [p for p in plans if p.group.run is None]
    growths, changed = [], []
    for plan in plans:
        stored = plan.group.run
        if stored is None:
            continue
        growth = _growth(stored, plan, memo)
        if growth is None:
            whole = Run.objects.get(pk=stored.pk)
            _, count = do_sync_run(
                owner, _stream_key(plan.group), plan.run, whole, plan.synced, memo
            )
            plan.group.run = whole
            changed += [whole] if count is not None else []
        elif growth.messages:
            growths.append(growth)
    do_grow_runs(growths)
    made = do_create_runs(
        owner, [(p.run, _stream_key(p.group), _rows(p.run.messages, memo)) for p in new]
    )
    for plan, run in zip(new, made, strict=True):
        plan.group.run = run
    update_rows([p.group for p in new], ["run"])
    return [*made, *(g.stored for g in growths), *changed]


def _growth(stored: Run, plan: Plan, memo: CountMemo | None) -> Growth | None:
    """The messages to add at the end of `stored` when that is all that changes (none
    when nothing does); None when more changes, or what it holds is not known."""
    synced, messages = plan.synced, plan.run.messages
    if synced is None or len(synced) != stored.message_count:
        return None
    kept = {"title": stored.title, "model": stored.model, "compactions": stored.compactions}
    if header_of(stored, plan.run) != kept or first_change(synced, messages) < len(synced):
        return None
    tail = messages[len(synced) :]
    return Growth(stored, tail, _rows(tail, memo))


def _rows(messages: Sequence[core.Message], memo: CountMemo | None) -> list[MessageRow]:
    return [message_row(m, LIVE_COUNTED, memo) for m in messages]


def _stream_key(group: SpanGroup) -> str:
    return f"otel:{group.key}"[:600]


def _keep_followed(owner: User, plan: Plan) -> None:
    """Remember what this process now follows of the plan's group (the most recently
    changed follow.FOLLOWED_KEPT groups)."""
    followed, group = plan.followed, plan.group
    assert group.run is not None
    group.version += 1
    followed.version = group.version
    followed.run_id, followed.revision = group.run.pk, group.run.revision
    followed.messages = plan.run.messages
    follow.FOLLOWED[(owner.pk, group.key)] = followed
    while len(follow.FOLLOWED) > follow.FOLLOWED_KEPT:
        follow.FOLLOWED.popitem(last=False)
