"""Stored message rows: never NUL (PostgreSQL refuses it in text and JSON), JSON that
reads back as written, the indexes that lookups use."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from hypothesis import given
from hypothesis import strategies as st

from contextsim import model as core
from contextsim.counting.estimators import ESTIMATORS, count_message
from contextsim.ingest.base import ParsedFile
from webapp.models import Message
from webapp.store.actions.rows import sqlite_json, storable
from webapp.store.actions.saving import do_save_runs

TEXT = st.text(alphabet=st.sampled_from(["a", "\x00", "\\", "u", "0", "é", "中"]), max_size=8)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


def _expected(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_expected(k): _expected(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expected(v) for v in value]
    return value


@given(JSON)
def test_storable_replaces_every_nul_in_keys_and_values_and_nothing_else(value):
    assert storable(value) == _expected(value)


def test_a_value_without_nul_is_stored_as_it_is_not_copied():
    skeleton = {"tokens": list(range(1_000)), "names": ["read", "write"]}
    assert storable(skeleton) is skeleton


ANY_TEXT = st.text()  # surrogates included: orjson refuses those, json escapes them
ANY_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=20,
)


@given(ANY_JSON)
def test_sqlite_json_reads_back_as_the_json_module_writes_it(value):
    assert json.loads(sqlite_json(value)) == json.loads(json.dumps(value))


def test_sqlite_json_falls_back_to_the_json_module_for_what_orjson_refuses():
    assert sqlite_json({"n": 2**65}) == json.dumps({"n": 2**65})
    assert sqlite_json(["\ud800"]) == json.dumps(["\ud800"])
    assert sqlite_json({"t": "中文 é"}) == '{"t":"中文 é"}'  # raw UTF-8, not escaped


@pytest.mark.django_db
def test_a_messages_parts_and_counts_read_back_as_written(alice):
    text = 'Привет, 世界 "quoted" \\ back\nslash \t tab \u2028 ' + "x" * 300
    messages = (
        core.Message(role="user", parts=(core.TextPart(text),)),
        core.Message(role="assistant", parts=(core.TextPart("ok " * 40),)),
    )
    (saved,) = do_save_runs(
        ParsedFile("rows", [core.Run(title="rows", messages=messages)]),
        owner=alice,
        estimators=("chars4",),
    )
    stored = list(Message.objects.filter(run=saved).order_by("index"))
    assert stored[0].parts == [{"type": "text", "text": text}]
    assert stored[1].parts == [{"type": "text", "text": "ok " * 40}]
    assert stored[0].counts == {"chars4": count_message(messages[0], ESTIMATORS["chars4"])}


def _plan(sql: str, params: list[Any]) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            return " ".join(str(row[-1]) for row in cursor.fetchall())
        cursor.execute("SET enable_seqscan = off")  # a tiny table: ask which index
        cursor.execute(f"EXPLAIN {sql}", params)
        return " ".join(row[0] for row in cursor.fetchall())


@pytest.mark.django_db
def test_a_runs_messages_are_found_by_the_run_and_index_one_with_no_index_of_the_run_alone():
    with connection.cursor() as cursor:
        indexes = connection.introspection.get_constraints(cursor, Message._meta.db_table)
    by_columns = [c["columns"] for c in indexes.values() if c["index"] or c["unique"]]
    assert ["run_id"] not in by_columns  # an import writes each index for each row
    assert ["run_id", "index"] in by_columns
    queries = [
        Message.objects.filter(run_id=1).order_by("index"),
        Message.objects.filter(run_id=1, index__gte=5),
        Message.objects.filter(run_id__in=[1, 2]),
    ]
    for query in queries:
        sql, params = query.values_list("id").query.sql_with_params()
        plan = _plan(sql, list(params))
        # An index led by the run (SQLite names the unique constraint's
        # sqlite_autoindex_<table>_1), not a scan of every message.
        assert any(name in plan for name in ("run_index_unique", "autoindex", "run_time")), plan


@pytest.mark.django_db
def test_the_search_triggers_outlive_the_index_dropped():
    """Letting Django alter the field instead would copy the table on SQLite and drop
    them with it: this guards the migration's way of dropping the index."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's full-text index is kept by triggers; PostgreSQL's is an index")
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        triggers = {row[0] for row in cursor.fetchall()}
    assert {"webapp_message_fts_delete", "webapp_message_fts_update"} <= triggers
