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

from contextsim.formats.otel import BODY, SpanCall, calls_of, runs_from, span_call
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
    found = calls_of(export)
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
    group, _ = SpanGroup.objects.get_or_create(owner=owner, key=key)
    group = SpanGroup.objects.select_for_update().get(pk=group.pk)
    before = group.spans.count()
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
    added = group.spans.count() - before
    if not added:
        return 0, None
    for call in calls:
        _remember(owner.pk, call)
    (run,) = runs_from(BODY, _stored_calls(owner.pk, group), [])
    stored, changed = sync_run(owner, f"otel:{key}"[:600], run, group.run)
    if group.run_id != stored.pk:
        SpanGroup.objects.filter(pk=group.pk).update(run=stored)
    return added, stored if changed is not None else None


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
