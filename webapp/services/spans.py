"""OpenTelemetry spans received over OTLP/HTTP: each model call span is stored once per
owner, and the live run of its conversation is brought in step with every call stored
(the file importer's mapping, contextsim.formats.otel, read both ways)."""

from __future__ import annotations

import re
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Max

from contextsim import model as core
from contextsim.formats.otel import BODY, Conversation, Inputs, SpanCall, calls_of, span_call
from webapp.models import ReceivedSpan, Run, SpanGroup
from webapp.services.streaming import sync_run

TRACE_ID = re.compile(r"[0-9a-f]{32}")
SPAN_ID = re.compile(r"[0-9a-f]{16}")
KEY_CHARS = SpanGroup._meta.get_field("key").max_length or 300


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a batch of spans did: model call spans stored (new ones only), the reason
    for each one rejected, and the live runs that changed."""

    stored: int
    rejected: tuple[str, ...]
    runs: tuple[Run, ...]


def receive_export(owner: AbstractBaseUser, export: Any) -> Receipt:
    """Store the model call spans of an OTLP JSON export (ids in hex) for `owner` and
    bring the live run of every conversation they belong to in step: one transaction
    per conversation, so a bad span or conversation never undoes the others and none is
    half saved. Spans that are not model calls are skipped. Raises FormatError when
    `export` is not an OTLP export at all."""
    found = calls_of(export, inputs=_INPUTS)
    rejected = list(found.rejected)
    groups: dict[str, list[SpanCall]] = defaultdict(list)
    for call in found.calls:
        problem = _unstorable(call)
        if problem:
            rejected.append(problem)
        else:
            groups[call.group].append(call)
    stored, runs = 0, []
    for key, calls in groups.items():
        added, run = _store_group(owner, key, calls)
        stored += added
        runs += [run] if run is not None else []
    return Receipt(stored, tuple(rejected), tuple(runs))


def _unstorable(call: SpanCall) -> str:
    """Why the call's span cannot be kept ('' when it can)."""
    if not TRACE_ID.fullmatch(call.trace_id):
        return f"span {call.span_id or '?'}: traceId: expected 32 hex digits, got {call.trace_id!r}"
    if not SPAN_ID.fullmatch(call.span_id):
        return f"span {call.span_id or '?'}: spanId: expected 16 hex digits"
    if len(call.group) > KEY_CHARS:
        return f"span {call.span_id}: conversation id: longer than {KEY_CHARS} characters"
    return ""


@transaction.atomic
def _store_group(
    owner: AbstractBaseUser, key: str, calls: list[SpanCall]
) -> tuple[int, Run | None]:
    """Store the calls of one conversation and, if any was new, bring its run in step.
    Returns how many were new and the run if it changed."""
    locked = SpanGroup.objects.select_for_update(of=("self",)).select_related("run")
    group, _ = locked.get_or_create(owner=owner, key=key)
    before = group.spans.aggregate(n=Count("pk"), last=Max("pk"))
    spans = (before["n"], before["last"] or 0)
    rows = [
        ReceivedSpan(
            owner=owner,
            group=group,
            trace_id=c.trace_id,
            span_id=c.span_id,
            start=c.start,
            span=c.data,
        )
        for c in calls
    ]
    # The unique constraint, not a look-up, keeps a retried span out: it holds when two
    # deliveries of one batch race.
    ReceivedSpan.objects.bulk_create(rows, ignore_conflicts=True)
    new = list(
        group.spans.filter(pk__gt=spans[1]).values_list("pk", "trace_id", "span_id", "start")
    )
    if not new:
        return 0, None
    by_id = {}
    for call in reversed(calls):  # the first of a span sent twice is the one stored
        by_id[call.trace_id, call.span_id] = call
    for call in by_id.values():
        _remember(owner.pk, call)
    place = (owner.pk, group.pk)
    try:
        return len(new), _follow(
            owner, group, spans, [(r[3], r[0], by_id[r[1], r[2]]) for r in new]
        )
    except BaseException:
        # What this process followed may be ahead of what the rollback leaves stored.
        _FOLLOWED.pop(place, None)
        raise


def _follow(
    owner: AbstractBaseUser,
    group: SpanGroup,
    spans: tuple[int, int],
    new: list[tuple[int, int, SpanCall]],
) -> Run | None:
    """Bring the group's run in step once its `new` calls ((start, pk, call)) are
    stored after `spans` ((count, last pk) of those stored before). When this process
    followed the group up to exactly those and the new calls start no earlier than the
    last one, they are added to what it followed (each call's messages read once);
    otherwise every stored call is read again. Returns the run if it changed."""
    place = (owner.pk, group.pk)
    new.sort(key=lambda n: n[:2])
    followed = _FOLLOWED.pop(place, None)
    stored_run = group.run
    if followed is None or not followed.continues(spans, stored_run, new[0][0]):
        # A group's first calls are all there is: nothing stored to read again.
        calls = [n[2] for n in new] if spans == (0, 0) else _stored_calls(owner.pk, group)
        followed = Followed(_conversation(group, calls))
        synced = None
    else:
        for _, _, call in new:
            followed.conversation.add(call)
        synced = followed.messages
    run = followed.conversation.run(BODY, [])
    stored, changed = sync_run(owner, f"otel:{group.key}"[:600], run, stored_run, synced)
    if group.run_id != stored.pk:
        SpanGroup.objects.filter(pk=group.pk).update(run=stored)
    followed.spans = (spans[0] + len(new), max(n[1] for n in new))
    followed.run_id, followed.revision = stored.pk, stored.revision
    followed.messages = run.messages
    _FOLLOWED[place] = followed
    while len(_FOLLOWED) > FOLLOWED_KEPT:
        _FOLLOWED.popitem(last=False)
    return stored if changed is not None else None


def _conversation(group: SpanGroup, calls: list[SpanCall]) -> Conversation:
    """The group's conversation built from `calls` (in start order)."""
    conversation = Conversation(group.key, bool(calls) and calls[0].trace_id == group.key)
    for call in calls:
        conversation.add(call)
    return conversation


@dataclass(slots=True)
class Followed:
    """What this process knows of a group it brought in step: its conversation so far,
    the spans it was built from ((count, last pk)), and the run it synced: its id, its
    revision after, and the messages it then holds."""

    conversation: Conversation
    spans: tuple[int, int] = (0, 0)
    run_id: int | None = None
    revision: int = -1
    messages: tuple[core.Message, ...] = ()

    def continues(self, spans: tuple[int, int], run: Run | None, start: int) -> bool:
        """Whether calls starting at `start` (ns) can be added to the conversation:
        the group's stored spans and its run are those it followed, unchanged since,
        and they start no earlier than the last call added."""
        last = self.conversation.last_start
        return (
            self.spans == spans
            and run is not None
            and (run.pk, run.revision) == (self.run_id, self.revision)
            and last is not None
            and start >= last
        )


FOLLOWED_KEPT = 2_000
"""How many groups this process keeps following (the most recently changed)."""
_FOLLOWED: OrderedDict[tuple[int, int], Followed] = OrderedDict()
_INPUTS = Inputs(FOLLOWED_KEPT)


def _stored_calls(owner_id: int, group: SpanGroup) -> list[SpanCall]:
    """The group's calls in start order, read again from the spans kept only when this
    process has not read them already: a span stored is never changed, so its call is
    the same every time, and reading every span of a long conversation again for each
    batch would cost the batch the whole conversation."""
    rows = list(group.spans.order_by("start", "id").values_list("pk", "trace_id", "span_id"))
    missing = [pk for pk, t, s in rows if (owner_id, t, s) not in _READ]
    for t, s, data in ReceivedSpan.objects.filter(pk__in=missing).values_list(
        "trace_id", "span_id", "span"
    ):
        call = span_call(BODY, f"span {t}/{s}", data)
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
