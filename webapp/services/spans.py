"""OpenTelemetry spans received over OTLP/HTTP: each model call span is stored once per
owner, and the live run of its conversation is brought in step with every call stored
(the file importer's mapping, contextsim.formats.otel, read both ways)."""

from __future__ import annotations

import re
from collections import OrderedDict, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import F
from django.db.models.constants import OnConflict
from django.utils import timezone

from contextsim import model as core
from contextsim.estimators import ESTIMATORS
from contextsim.formats import FormatError
from contextsim.formats.otel import BODY, Conversation, Inputs, SpanCall, calls_of, span_call
from webapp import otlp_wire as wire
from webapp.models import ReceivedSpan, Run, SpanGroup
from webapp.services import span_events, span_parents
from webapp.services.live_batch import Growth, create_runs, grow_runs, update_rows
from webapp.services.message_rows import MessageRow, message_row
from webapp.services.saving import NO_FIGURES
from webapp.services.streaming import first_change, header_of, sync_run

TRACE_ID = re.compile(r"[0-9a-f]{32}")
SPAN_ID = re.compile(r"[0-9a-f]{16}")
KEY_CHARS = SpanGroup._meta.get_field("key").max_length or 300
EMPTY: Mapping[tuple[str, str], bytes] = {}


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a batch of spans did: model call spans stored (new ones only), the reason
    for each one rejected, and the live runs that changed."""

    stored: int
    rejected: tuple[str, ...]
    runs: tuple[Run, ...]


def receive_export(
    owner: AbstractBaseUser, export: Any, serialized: Mapping[tuple[str, str], bytes] = EMPTY
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
    try:
        with transaction.atomic():
            # Events received as log records are read with their spans; the owner's
            # lock keeps a logs batch from storing one between that and the spans.
            lock_owner(owner)
            ids = span_events.span_ids(export)
            export = span_events.with_events(export, span_events.events_of(owner, ids))
            found = calls_of(export, inputs=_INPUTS)
            rejected = list(found.rejected)
            for call in span_parents.joined(owner, found.calls):
                problem = _unstorable(call)
                if problem:
                    rejected.append(problem)
                else:
                    groups[call.group].append(call)
            moved = span_parents.adopt(owner, found.named)
            for key in moved:  # their stored calls changed: read again
                _FOLLOWED.pop((owner.pk, key), None)
            stored, runs = _receive(owner, groups, rejected, serialized) if groups else (0, [])
            runs += _resync_groups(owner, moved - groups.keys())
    except BaseException:
        # What this process followed may be ahead of what the rollback leaves stored.
        for key in groups.keys() | moved:
            _FOLLOWED.pop((owner.pk, key), None)
        raise
    return Receipt(stored, tuple(rejected), tuple(runs))


def lock_owner(owner: AbstractBaseUser) -> None:
    """Take the owner's lock on what it receives over OTLP (spans and events), for the
    rest of the transaction."""
    model = type(owner)
    list(model._default_manager.select_for_update().filter(pk=owner.pk).values_list("pk"))


def resync(owner: AbstractBaseUser, ids: set[tuple[str, str]]) -> list[Run]:
    """Bring in step the runs of the groups whose stored spans `ids` ((trace id, span
    id)) gained events since they were read (in the caller's transaction, holding the
    owner's lock): their calls are read again from what is stored. Returns the runs
    that changed."""
    traces = sorted({t for t, _ in ids})
    keys: set[str] = set()
    for first in range(0, len(traces), CHUNK):
        rows = ReceivedSpan.objects.filter(owner=owner, trace_id__in=traces[first : first + CHUNK])
        keys.update(
            k for t, s, k in rows.values_list("trace_id", "span_id", "group__key") if (t, s) in ids
        )
    for trace, span in ids:
        _READ.pop((owner.pk, trace, span), None)
    return _resync_groups(owner, keys)


def _resync_groups(owner: AbstractBaseUser, keys: set[str]) -> list[Run]:
    """Bring the runs of the groups `keys` in step with what they store, read again; a
    group left with no span (its calls moved to their conversation's) is deleted with
    its run. Returns the runs that changed."""
    if not keys:
        return []
    plans = []
    for key, group in _locked_groups(owner, sorted(keys)).items():
        _FOLLOWED.pop((owner.pk, key), None)
        calls = _stored_calls(owner, group)
        if not calls:
            Run.objects.filter(pk=group.run_id).delete()
            SpanGroup.objects.filter(pk=group.pk).delete()
            continue
        followed = Followed(_conversation(group, calls))
        plans.append(Plan(group, [], followed, followed.conversation.run(BODY, None), None))
    return _apply(owner, plans)


def _unstorable(call: SpanCall) -> str:
    """Why the call's span cannot be kept ('' when it can)."""
    if not TRACE_ID.fullmatch(call.trace_id):
        return f"span {call.span_id or '?'}: traceId: expected 32 hex digits, got {call.trace_id!r}"
    if not SPAN_ID.fullmatch(call.span_id):
        return f"span {call.span_id or '?'}: spanId: expected 16 hex digits"
    if len(call.group) > KEY_CHARS:
        return f"span {call.span_id}: conversation id: longer than {KEY_CHARS} characters"
    return ""


def _receive(
    owner: AbstractBaseUser,
    groups: dict[str, list[SpanCall]],
    rejected: list[str],
    serialized: Mapping[tuple[str, str], bytes],
) -> tuple[int, list[Run]]:
    """Store the calls not stored before and bring their groups' runs in step (in the
    caller's transaction). Returns how many calls were new and the runs that changed."""
    locked = _locked_groups(owner, list(groups))
    seen = _stored_ids(owner, [c for calls in groups.values() for c in calls])
    plans = []
    for key, calls in groups.items():
        new = _unseen(calls, seen)
        if not new:
            continue
        try:
            plans.append(_plan(owner, locked[key], new))
        except FormatError as error:
            rejected += [f"span {c.span_id}: {error.where}: {error.problem}" for c in new]
    _insert_spans(
        [
            _span_row(owner, p.group, c, serialized.get((c.trace_id, c.span_id)))
            for p in plans
            for c in p.new
        ]
    )
    return sum(len(p.new) for p in plans), _apply(owner, plans)


def _apply(owner: AbstractBaseUser, plans: list[Plan]) -> list[Run]:
    """Bring the planned groups' runs in step, a new version of each group (what
    another process followed of it is stale). Returns the runs that changed."""
    SpanGroup.objects.filter(pk__in=[p.group.pk for p in plans]).update(version=F("version") + 1)
    runs = _bring_in_step(owner, plans)
    for plan in plans:
        _keep_followed(owner, plan)
    return runs


def _span_row(
    owner: AbstractBaseUser, group: SpanGroup, call: SpanCall, serialized: bytes | None
) -> tuple[Any, ...]:
    """The span's row (SPAN_COLUMNS) as the driver takes it."""
    how, body = wire.packed(call.data, serialized)
    received = connection.ops.adapt_datetimefield_value(timezone.now())
    parent = call.parent if SPAN_ID.fullmatch(call.parent) else ""
    return (
        owner.pk,
        group.pk,
        call.trace_id,
        call.span_id,
        parent,
        call.start,
        how,
        body,
        received,
    )


def _locked_groups(owner: AbstractBaseUser, keys: list[str]) -> dict[str, SpanGroup]:
    """The owner's groups of `keys`, created where missing, locked in the order of
    their keys (so two batches sharing conversations never wait on each other in a
    circle), each with its run."""
    keys = sorted(keys)
    found = _locked(owner, keys)
    missing = [k for k in keys if k not in found]
    if missing:
        # Another batch may create the same groups meanwhile: both are kept out of
        # each other's way by the unique constraint, then read here.
        groups = [SpanGroup(owner=owner, key=k) for k in missing]
        SpanGroup.objects.bulk_create(groups, ignore_conflicts=True, batch_size=CHUNK)
        found.update(_locked(owner, missing))
    return found


def _locked(owner: AbstractBaseUser, keys: list[str]) -> dict[str, SpanGroup]:
    found: dict[str, SpanGroup] = {}
    for first in range(0, len(keys), CHUNK):
        rows = (
            SpanGroup.objects.select_for_update(of=("self",))
            .select_related("run")
            .only(*GROUP_FIELDS)
            .filter(owner=owner, key__in=keys[first : first + CHUNK])
            .order_by("key")
        )
        found.update((g.key, g) for g in rows)
    return found


GROUP_FIELDS = (
    "key",
    "owner_id",
    "version",
    "run_id",
    *(f"run__{f}" for f in ("revision", "message_count", "title", "model", "compactions")),
    *(f"run__{f}" for f in NO_FIGURES),
)
"""What a batch reads of its groups and their runs: enough to follow them and let
them grow (a run that changes otherwise is read whole, streaming.sync_run)."""


def _stored_ids(owner: AbstractBaseUser, calls: list[SpanCall]) -> set[tuple[str, str]]:
    """The (trace id, span id) of `calls` already stored for `owner`: looked up by
    trace on the unique index, in SQL of its own (the ORM's per-value work on a
    thousand ids was a tenth of a batch)."""
    ids = {(c.trace_id, c.span_id) for c in calls}
    traces = sorted({t for t, _ in ids})
    ops, table = connection.ops, ReceivedSpan._meta.db_table
    seen: set[tuple[str, str]] = set()
    with connection.cursor() as cursor:
        for first in range(0, len(traces), CHUNK):
            chunk = traces[first : first + CHUNK]
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                f"SELECT trace_id, span_id FROM {ops.quote_name(table)} "
                f"WHERE owner_id = %s AND trace_id IN ({marks})",
                [owner.pk, *chunk],
            )
            seen.update(row for row in cursor.fetchall() if row in ids)
    return seen


def _insert_spans(rows: list[tuple[Any, ...]]) -> None:
    """Insert span rows (SPAN_COLUMNS), a span stored already left as it is: the
    unique constraint, not only the look-up, keeps a retried span out."""
    ops = connection.ops
    meta = ReceivedSpan._meta
    fields = [meta.get_field(c) for c in SPAN_COLUMNS]
    names = ", ".join(ops.quote_name(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    suffix = ops.on_conflict_suffix_sql(fields, OnConflict.IGNORE, None, None)
    sql = (
        f"{ops.insert_statement(on_conflict=OnConflict.IGNORE)} "
        f"{ops.quote_name(meta.db_table)} ({names}) VALUES ({marks}) {suffix}"
    )
    with connection.cursor() as cursor:
        for first in range(0, len(rows), CHUNK):
            cursor.executemany(sql, rows[first : first + CHUNK])


SPAN_COLUMNS = (
    "owner",
    "group",
    "trace_id",
    "span_id",
    "parent_id",
    "start",
    "packed",
    "body",
    "received",
)


def _unseen(calls: list[SpanCall], seen: set[tuple[str, str]]) -> list[SpanCall]:
    """The calls not stored before, in start order (ties as received); of a span sent
    twice in the batch, the first."""
    new: dict[tuple[str, str], SpanCall] = {}
    for call in calls:
        ids = (call.trace_id, call.span_id)
        if ids not in seen and ids not in new:
            new[ids] = call
    return sorted(new.values(), key=lambda c: c.start)


CHUNK = 400
"""Keys or ids per query (well under SQLite's bound on a statement's parameters)."""


@dataclass(slots=True)
class Plan:
    """One group's new calls (start order), what this process follows of it once they
    are added, the run it now makes, and the messages its stored run holds when known
    without reading them (None: read them)."""

    group: SpanGroup
    new: list[SpanCall]
    followed: Followed
    run: core.Run
    synced: tuple[core.Message, ...] | None


def _plan(owner: AbstractBaseUser, group: SpanGroup, new: list[SpanCall]) -> Plan:
    """Add the group's `new` calls to what this process followed of it when it
    followed the group up to what is stored and they start no earlier than the last
    one; otherwise put every stored call and the new ones together again (each call's
    messages are read once either way)."""
    for call in new:
        _remember(owner.pk, call)
    followed = _FOLLOWED.pop((owner.pk, group.key), None)
    if followed is not None and followed.continues(group.version, group.run, new[0].start):
        for call in new:
            followed.conversation.add(call)
        synced: tuple[core.Message, ...] | None = followed.messages
    else:
        # A group's first calls are all there is: nothing stored to read again.
        stored = _stored_calls(owner, group) if group.version else []
        calls = sorted([*stored, *new], key=lambda c: c.start)  # stable: stored first
        followed, synced = Followed(_conversation(group, calls)), None
    return Plan(group, new, followed, followed.conversation.run(BODY, None), synced)


def _bring_in_step(owner: AbstractBaseUser, plans: list[Plan]) -> list[Run]:
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
        growth = _growth(stored, plan)
        if growth is None:
            whole = Run.objects.get(pk=stored.pk)
            _, count = sync_run(owner, _stream_key(plan.group), plan.run, whole, plan.synced)
            plan.group.run = whole
            changed += [whole] if count is not None else []
        elif growth.messages:
            growths.append(growth)
    grow_runs(growths)
    made = create_runs(owner, [(p.run, _stream_key(p.group), _rows(p.run.messages)) for p in new])
    for plan, run in zip(new, made, strict=True):
        plan.group.run = run
    update_rows([p.group for p in new], ["run"])
    return [*made, *(g.stored for g in growths), *changed]


def _growth(stored: Run, plan: Plan) -> Growth | None:
    """The messages to add at the end of `stored` when that is all that changes (none
    when nothing does); None when more changes, or what it holds is not known."""
    synced, messages = plan.synced, plan.run.messages
    if synced is None or len(synced) != stored.message_count:
        return None
    kept = {"title": stored.title, "model": stored.model, "compactions": stored.compactions}
    if header_of(stored, plan.run) != kept or first_change(synced, messages) < len(synced):
        return None
    tail = messages[len(synced) :]
    return Growth(stored, tail, _rows(tail))


def _rows(messages: Sequence[core.Message]) -> list[MessageRow]:
    return [message_row(m, ESTIMATORS) for m in messages]


def _stream_key(group: SpanGroup) -> str:
    return f"otel:{group.key}"[:600]


def _keep_followed(owner: AbstractBaseUser, plan: Plan) -> None:
    """Remember what this process now follows of the plan's group (the most recently
    changed FOLLOWED_KEPT groups)."""
    followed, group = plan.followed, plan.group
    assert group.run is not None
    group.version += 1
    followed.version = group.version
    followed.run_id, followed.revision = group.run.pk, group.run.revision
    followed.messages = plan.run.messages
    _FOLLOWED[(owner.pk, group.key)] = followed
    while len(_FOLLOWED) > FOLLOWED_KEPT:
        _FOLLOWED.popitem(last=False)


def _conversation(group: SpanGroup, calls: list[SpanCall]) -> Conversation:
    """The group's conversation built from `calls` (in start order)."""
    conversation = Conversation(group.key, bool(calls) and calls[0].trace_id == group.key)
    for call in calls:
        conversation.add(call)
    return conversation


@dataclass(slots=True)
class Followed:
    """What this process knows of a group it brought in step: its conversation so far,
    the group's version it was built from (SpanGroup.version), and the run it synced:
    its id, its revision after, and the messages it then holds."""

    conversation: Conversation
    version: int = 0
    run_id: int | None = None
    revision: int = -1
    messages: tuple[core.Message, ...] = ()

    def continues(self, version: int, run: Run | None, start: int) -> bool:
        """Whether calls starting at `start` (ns) can be added to the conversation:
        the group's stored spans and its run are those it followed, unchanged since,
        and they start no earlier than the last call added."""
        last = self.conversation.last_start
        return (
            self.version == version
            and run is not None
            and (run.pk, run.revision) == (self.run_id, self.revision)
            and last is not None
            and start >= last
        )


FOLLOWED_KEPT = 2_000
"""How many groups this process keeps following (the most recently changed)."""
_FOLLOWED: OrderedDict[tuple[int, str], Followed] = OrderedDict()
_INPUTS = Inputs(FOLLOWED_KEPT)


def _stored_calls(owner: AbstractBaseUser, group: SpanGroup) -> list[SpanCall]:
    """The group's calls in start order, read again from the spans kept (with the
    events received for them) only when this process has not read them already: a
    span stored is never changed, so its call is the same every time, and reading
    every span of a long conversation again for each batch would cost the batch the
    whole conversation."""
    owner_id = owner.pk
    rows = list(group.spans.order_by("start", "id").values_list("pk", "trace_id", "span_id"))
    missing = [pk for pk, t, s in rows if (owner_id, t, s) not in _READ]
    kept = list(
        ReceivedSpan.objects.filter(pk__in=missing).values_list(
            "trace_id", "span_id", "packed", "body"
        )
    )
    events = span_events.events_of(owner, {(t, s) for t, s, _, _ in kept}) if kept else {}
    for t, s, how, body in kept:
        span = span_events.joined(wire.unpacked(how, bytes(body)), events.get((t, s), []))
        call = span_call(BODY, f"span {t}/{s}", span)
        if call is not None:
            _remember(owner_id, call)
    found = (_READ.get((owner_id, t, s)) for _, t, s in rows)
    return [c for c in found if c is not None]


READ_KEPT = 50_000
"""How many calls this process keeps read (the newest; about a kilobyte each)."""
_READ: OrderedDict[tuple[int, str, str], SpanCall] = OrderedDict()


def _remember(owner_id: int, call: SpanCall) -> None:
    _READ[(owner_id, call.trace_id, call.span_id)] = replace(call, data=None)
    _READ.move_to_end((owner_id, call.trace_id, call.span_id))
    while len(_READ) > READ_KEPT:
        _READ.popitem(last=False)
