"""Span groups and received spans in the database, for webapp.ingest.otlp.services.receiving: groups
found or made and locked, spans seen before looked up, new ones written in plain
SQL (the ORM's per-value work was a large part of a batch)."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import User
from django.db import connection
from django.db.models.constants import OnConflict
from django.utils import timezone

from contextsim.systems.otel.spans import SpanCall
from webapp.ingest.otlp import wire as wire
from webapp.models import ReceivedSpan, SpanGroup
from webapp.store.actions.rows import column, field_of
from webapp.store.actions.saving import NO_FIGURES

TRACE_ID = re.compile(r"[0-9a-f]{32}")
SPAN_ID = re.compile(r"[0-9a-f]{16}")
KEY_CHARS = SpanGroup._meta.get_field("key").max_length or 300
"""The longest conversation id a group keeps."""


def span_row(
    owner: User, group: SpanGroup, call: SpanCall, serialized: bytes | None
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


def locked_groups(owner: User, keys: list[str]) -> dict[str, SpanGroup]:
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


def _locked(owner: User, keys: list[str]) -> dict[str, SpanGroup]:
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


def stored_ids(owner: User, calls: list[SpanCall]) -> set[tuple[str, str]]:
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


def insert_spans(rows: list[tuple[Any, ...]]) -> None:
    """Insert span rows (SPAN_COLUMNS), a span stored already left as it is: the
    unique constraint, not only the look-up, keeps a retried span out."""
    ops = connection.ops
    meta = ReceivedSpan._meta
    fields = [field_of(ReceivedSpan, c) for c in SPAN_COLUMNS]
    names = ", ".join(column(ReceivedSpan, c) for c in SPAN_COLUMNS)
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


def unseen(calls: list[SpanCall], seen: set[tuple[str, str]]) -> list[SpanCall]:
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
