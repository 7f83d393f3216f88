"""Counting (the tokenizers) never runs inside a write transaction: on SQLite a
transaction holds the database's one write lock from its start (IMMEDIATE), so a large
call counted inside one froze every other writer for minutes. Every door that stores
messages is checked: a captured call (a new run and a continued one), the API's new
run and append, a live run that follows a log, an import."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from contextsim import model as core
from contextsim.counting import estimators
from tests.web.test_dashboard import native_run
from tests.web.test_import_service import import_bytes
from webapp.access.services.tokens import create_token
from webapp.ingest.proxy.services import Capture, record
from webapp.models import Run
from webapp.store.actions.appends import do_create_live_runs

# A test in a transaction of its own would count inside one: these run without.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def counted_in_transaction(monkeypatch) -> Iterator[list[str]]:
    """Each count made inside a transaction (empty: none was). Every count of a message
    by an estimator goes through estimators.count_parts (a memo's first count too)."""
    found: list[str] = []
    counts = 0
    original = estimators.count_parts

    def counting(message, estimator):  # type: ignore[no-untyped-def]
        nonlocal counts
        counts += 1
        if connection.in_atomic_block:
            found.append(f"{estimator.name}: {message.role} message")
        return original(message, estimator)

    monkeypatch.setattr(estimators, "count_parts", counting)
    yield found
    assert counts, "nothing was counted: the probe watched the wrong function"


def _capture(messages: list[dict], answer: str) -> Capture:
    now = time.time()
    return Capture(
        provider="anthropic",
        endpoint="messages",
        body={"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages},
        answer={
            "id": f"msg_{answer}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": answer}],
            "usage": {"input_tokens": 50, "output_tokens": 5},
        },
        status=200,
        started=now,
        first_byte=now,
        done=now,
        session="s1",
    )


def test_a_captured_call_is_counted_before_its_write(alice, counted_in_transaction):
    first = [{"role": "user", "content": "long text " * 5_000}]
    record(alice, _capture(first, "one"))
    second = [*first, {"role": "assistant", "content": "one"}, {"role": "user", "content": "more"}]
    call = record(alice, _capture(second, "two"))
    assert call.run is not None and Run.objects.count() == 1
    assert call.run.message_count == 4
    assert counted_in_transaction == []


def test_the_apis_new_run_and_append_are_counted_before_their_write(alice, counted_in_transaction):
    key = create_token(alice, "agent")[1]
    client = Client()
    auth = {"Authorization": f"Bearer {key}"}
    header = {
        "contextsim": 1,
        "runs": [{"title": "live", "messages": [{"role": "user", "content": "hi " * 3_000}]}],
    }
    made = client.post(
        reverse("api-runs"), json.dumps(header), content_type="application/json", headers=auth
    )
    assert made.status_code == 201
    run_id = made.json()["runs"][0]["id"]
    body = {"messages": [{"role": "assistant", "content": "ok " * 3_000}]}
    added = client.post(
        reverse("api-append", args=[run_id]),
        json.dumps(body),
        content_type="application/json",
        headers=auth,
    )
    assert added.status_code == 200
    assert counted_in_transaction == []


def test_live_runs_and_imports_are_counted_before_their_write(alice, counted_in_transaction):
    runs = [core.Run("a", (core.Message("user", (core.TextPart("x " * 2_000),)),))]
    do_create_live_runs(alice, runs)
    import_bytes(alice, "dash.json", native_run())
    assert counted_in_transaction == []


def test_spans_received_over_otlp_are_counted_before_their_write(
    live_server, alice, counted_in_transaction
):
    from tests.web.test_otlp_receiver import FIRST, SECOND, _export, _exporter, _recorded, _url

    key = create_token(alice, "otel")[1]
    exporter = _exporter(_url(live_server), key)
    spans = _recorded(FIRST, SECOND)
    _export(exporter, spans[:1])  # a new run
    _export(exporter, spans)  # the same run grows
    (run,) = Run.objects.filter(format="otel")
    assert run.message_count == 5
    assert counted_in_transaction == []
