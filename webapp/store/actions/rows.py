"""A message's stored row, and writing rows in large batches.

Django's bulk_create builds each row's SQL a value at a time through the model fields,
most of the time a large import spends writing; here a row is a plain tuple whose
values are adapted once (JSON, datetimes) by the database's own operations and the
batch goes to the driver's executemany.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any, NamedTuple

import orjson
from django.db import connection, transaction
from django.db.models import Field, Model

from contextsim import model as core
from contextsim.counting.estimators import (
    ESTIMATORS,
    SLOW,
    CountMemo,
    Estimator,
    content_key,
    count_message,
)
from contextsim.systems.native.format import part_to_dict
from webapp.models import Message

BATCH = 500
"""Rows per INSERT statement."""


class MessageRow(NamedTuple):
    """What is stored of one message besides its run and index (webapp.models.Message)."""

    role: str
    kind: str
    parts: list[Any]
    compact_summary: bool
    tool_names: str
    content_hash: str
    counts: dict[str, int]
    usage_input: int | None
    usage_cache_read: int | None
    usage_cache_write: int | None
    usage_output: int | None
    source: str
    timestamp: datetime | None
    usage_cache_write_1h: int | None
    usage_model: str | None


LIVE_COUNTED: dict[str, Estimator] = {n: e for n, e in ESTIMATORS.items() if n not in SLOW}
"""What a live run's new messages are counted by as they arrive: the fast estimators.
The real tokenizers' counts are made when first needed, for the runs someone looks at:
the first skeleton built under one of them (webapp.store.reads; the estimates beside usage,
webapp.estimators.reads, build it too) stores its counts with the messages, and a
process following the run counts only what is appended. Counting every arriving
message with them was a fifth of what the OTLP receiver and the streaming API spent."""

_JSON = frozenset(("parts", "counts"))


def sqlite_json(value: Any) -> str:
    """`value` as JSON text for a SQLite JSON column: orjson's (raw UTF-8, several times
    faster than the json module; a large import spent a tenth of its writing here), or
    the json module's where orjson refuses it (a lone surrogate, an integer beyond 64
    bits), as Django would have written it."""
    try:
        return orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, UnicodeDecodeError):
        return json.dumps(value)


def message_row(
    message: core.Message, estimators: dict[str, Estimator], memo: CountMemo | None = None
) -> MessageRow:
    """The row of `message`, counted by every one of `estimators` (through `memo` when
    given: what the run's skeletons are then built with need not be counted again)."""
    usage = message.usage
    key = content_key(message)
    return MessageRow(
        role=message.role,
        kind=message.kind,
        parts=_stored_parts(message),
        compact_summary=message.compact_summary,
        tool_names=storable(", ".join(c.name for c in message.tool_calls)[:500]),
        content_hash=key,
        counts={name: count_message(message, est, key, memo) for name, est in estimators.items()},
        usage_input=usage.input_tokens if usage else None,
        usage_cache_read=usage.cache_read if usage else None,
        usage_cache_write=usage.cache_write if usage else None,
        usage_output=usage.output_tokens if usage else None,
        source=storable(message.source[:200]),
        timestamp=(
            datetime.fromtimestamp(message.time, tz=UTC) if message.time is not None else None
        ),
        usage_cache_write_1h=usage.cache_write_1h if usage and usage.cache_write_1h else None,
        usage_model=storable(usage.model[:200]) if usage and usage.model else None,
    )


def field_of(model: type[Model], name: str) -> Field[Any, Any]:
    """The concrete field `name` of `model` (a column of its table)."""
    found = model._meta.get_field(name)
    assert isinstance(found, Field), f"{model.__name__}.{name} is not a column"
    return found


def column(model: type[Model], name: str) -> str:
    """The quoted column of `model`'s field `name`."""
    return connection.ops.quote_name(str(field_of(model, name).column))


def insert_messages(
    run_id: int, start: int, rows: Sequence[MessageRow], *, indexed: bool = True
) -> None:
    """Write `rows` as messages `start`, `start + 1`... of run `run_id` (in the caller's
    transaction), BATCH rows per statement; see insert_batches for `indexed`."""
    insert_batches([(run_id, start, rows)], indexed=indexed)


def insert_batches(
    batches: Sequence[tuple[int, int, Sequence[MessageRow]]], *, indexed: bool = True
) -> None:
    """Write each (run id, start, rows) as messages `start`, `start + 1`... of that run
    (in the caller's transaction), BATCH rows per statement whichever runs they are of.
    On SQLite their text is added to the search index too, unless `indexed` is False:
    then the caller indexes it later (`index_run`)."""
    ops = connection.ops
    meta = Message._meta
    columns = ("run", "index", *MessageRow._fields)
    names = ", ".join(column(Message, c) for c in columns)
    marks = ", ".join(["%s"] * len(columns))
    sql = f"INSERT INTO {ops.quote_name(meta.db_table)} ({names}) VALUES ({marks})"
    json_at = [i for i, name in enumerate(MessageRow._fields) if name in _JSON]
    if connection.vendor == "sqlite":
        to_json: Callable[[Any], Any] = sqlite_json
    else:  # PostgreSQL's adapter (psycopg's Jsonb) sends the value as jsonb
        to_json = partial(ops.adapt_json_value, encoder=None)
    time_at = MessageRow._fields.index("timestamp")
    params: list[tuple[Any, ...]] = []
    texts: list[str] = []
    times: dict[datetime, Any] = {}
    indexed = indexed and connection.vendor == "sqlite"
    with transaction.atomic(), connection.cursor() as cursor:
        before = _last_id(cursor) if indexed else 0
        for run_id, start, rows in batches:
            for i, row in enumerate(rows, start):
                values = list(row)
                for j in json_at:
                    values[j] = to_json(values[j])
                time = values[time_at]
                if isinstance(time, datetime):
                    # A call's new messages share its time: adapted once.
                    if time not in times:
                        times[time] = ops.adapt_datetimefield_value(time)
                    values[time_at] = times[time]
                params.append((run_id, i, *values))
                if indexed:
                    texts.append(searchable(row.parts))
                if len(params) == BATCH:
                    cursor.executemany(sql, params)
                    params = []
        if params:
            cursor.executemany(sql, params)
        if indexed:
            _index(cursor, before, texts)


def _last_id(cursor: Any) -> int:
    cursor.execute(f"SELECT MAX(id) FROM {connection.ops.quote_name(Message._meta.db_table)}")
    found = cursor.fetchone()[0]
    return int(found or 0)


def _index(cursor: Any, before: int, texts: list[str]) -> None:
    """Add the text of the messages just written (ids after `before`, in the order
    written) to SQLite's full-text index (selectors.search). Done here, not by a
    trigger: the trigger walked each row's JSON again in SQL, half of a batch's time.
    The write transaction holds SQLite's only write lock, and AUTOINCREMENT ids only
    grow, so the ids after `before` are these rows' in order."""
    table = connection.ops.quote_name(Message._meta.db_table)
    cursor.execute(f"SELECT id FROM {table} WHERE id > %s ORDER BY id", [before])
    ids = [row[0] for row in cursor.fetchall()]
    if len(ids) != len(texts):
        raise RuntimeError(f"wrote {len(texts)} messages but found {len(ids)} new ones")
    _add_to_index(cursor, list(zip(ids, texts, strict=True)))


def _add_to_index(cursor: Any, rows: list[tuple[int, str]]) -> None:
    """Index the text of messages given as (id, searchable text), BATCH per statement."""
    for first in range(0, len(rows), BATCH):
        cursor.executemany(
            "INSERT INTO webapp_message_fts(rowid, body) VALUES (%s, %s)",
            rows[first : first + BATCH],
        )


INDEX_ROWS = 2_000
"""Messages read and indexed per transaction by `index_run`."""


def index_run(run_id: int, done: Callable[[int], None] = lambda n: None) -> None:
    """Add the text of every message of run `run_id` written unindexed
    (insert_batches with `indexed` False) to SQLite's full-text index, INDEX_ROWS
    messages per short transaction; a message indexed already (by an attempt whose
    worker was lost) is left as it is. `done` is told how many messages are done after
    each batch (it may raise to stop). Nothing to do on PostgreSQL, whose index is an
    expression over the rows, kept by the database."""
    if connection.vendor != "sqlite":
        return
    rows = Message.objects.filter(run_id=run_id).order_by("pk").values_list("pk", "parts")
    after, count = 0, 0
    while True:
        # Read in the write transaction: a message deleted meanwhile (its run deleted)
        # leaves no row in the index.
        with transaction.atomic(), connection.cursor() as cursor:
            batch = list(rows.filter(pk__gt=after)[:INDEX_ROWS])
            if not batch:
                return
            ids = [pk for pk, _ in batch]
            marks = ", ".join(["%s"] * len(ids))
            cursor.execute(f"SELECT rowid FROM webapp_message_fts WHERE rowid IN ({marks})", ids)
            there = {row[0] for row in cursor.fetchall()}
            _add_to_index(
                cursor, [(pk, searchable(parts)) for pk, parts in batch if pk not in there]
            )
        after, count = ids[-1], count + len(batch)
        done(count)


UNSEARCHED = frozenset(("type", "id", "call_id", "media_type"))
"""Keys of a stored part whose strings are structure, not text (not searched)."""


def searchable(parts: list[Any]) -> str:
    """The text of a message's stored parts that search matches: every string but
    those of UNSEARCHED keys, in order, joined by spaces."""
    return " ".join(
        value
        for part in parts
        for key, value in part.items()
        if isinstance(value, str) and key not in UNSEARCHED
    )


def _stored_parts(message: core.Message) -> list[Any]:
    """The message's parts as stored: walked for NUL characters only when one of its
    strings has one (walking every part of every message was a tenth of a large
    import)."""
    parts = [part_to_dict(p) for p in message.parts]
    if any("\x00" in text for text in _texts(message)):
        return [storable(p) for p in parts]
    return parts


def _texts(message: core.Message) -> list[str]:
    out: list[str] = []
    for part in message.parts:
        for name in ("text", "name", "arguments", "call_id", "id", "definition", "media_type"):
            value = getattr(part, name, None)
            if isinstance(value, str):
                out.append(value)
    return out


def storable(value: Any) -> Any:
    """`value` with NUL characters replaced by U+FFFD: PostgreSQL cannot store NUL in
    text or JSON, and logs of binary tool output do contain it. Counts are taken from
    the original text."""
    if isinstance(value, dict | list | tuple) and "\\u0000" not in json.dumps(value):
        # Nearly always: one pass in C instead of a walk of every value in Python
        # (a large run's skeleton holds lists of hundreds of thousands of numbers).
        return value
    return _replaced(value)


def _replaced(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_replaced(k): _replaced(v) for k, v in value.items()}
    if isinstance(value, list | tuple):  # a skeleton's nested fields are tuples
        return [_replaced(v) for v in value]
    return value


def update_rows(objects: Sequence[Model], fields: Sequence[str]) -> None:
    """Write `fields` of each of `objects` (rows of one model, in the caller's
    transaction) to its row by primary key: one UPDATE statement, run for every row by
    the driver. Django's bulk_update builds one CASE per field and row instead: at the
    hundreds of rows a receiver's batch updates, half the receiver's time (bench
    `otlp`: 1,130-1,681 spans/s against 3,106-3,131 this way)."""
    if not objects:
        return
    model = type(objects[0])
    ops = connection.ops
    columns = [field_of(model, f) for f in fields]
    assigned = ", ".join(f"{column(model, f)} = %s" for f in fields)
    key = column(model, model._meta.pk.name)
    sql = f"UPDATE {ops.quote_name(model._meta.db_table)} SET {assigned} WHERE {key} = %s"
    # Values are prepared by their fields, once per value object (a batch's rows share
    # their time).
    prepared: list[dict[int, Any]] = [{} for _ in columns]
    params = []
    for o in objects:
        row = []
        for c, seen in zip(columns, prepared, strict=True):
            value = getattr(o, c.attname)
            if id(value) not in seen:
                seen[id(value)] = c.get_db_prep_save(value, connection)
            row.append(seen[id(value)])
        params.append((*row, o.pk))
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)
