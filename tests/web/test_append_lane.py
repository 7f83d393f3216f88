"""The append lane (webapp.runtime.append_lane): the streaming API's appends served by Django's
synchronous handler in threads that keep their database connection. Served by uvicorn
as `manage.py serve` serves them, every answer (status, headers, body) is the one
Django's own ASGI handler gives the same request; the lane opens one connection per
thread, not one per append; a connection the database server dropped is replaced
before an append uses it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from django.db import connection
from django.db.backends.signals import connection_created

from tests.upstream import serving
from webapp.access.services.tokens import create_token
from webapp.models import Message, Run
from webapp.runtime import append_lane

VARYING = {"date", "server", "content-length"}


@pytest.fixture
def servers(transactional_db) -> Iterator[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(the whole app, appends through the lane; Django's ASGI handler alone)."""
    from webapp.asgi import application, django_app

    append_lane.stop()
    with serving(application) as lane, serving(django_app) as plain:
        yield lane, plain
    append_lane.stop()


def _new_run(base: str, key: str) -> str:
    header = {"contextsim": 1, "runs": [{"title": "streamed", "messages": []}]}
    answer = httpx.post(f"{base}/api/runs/", json=header, headers=_auth(key))
    assert answer.status_code == 201
    run_id: str = answer.json()["runs"][0]["id"]
    return run_id


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _said(n: int) -> list[dict[str, Any]]:
    call = {"id": f"c{n}", "name": "read", "input": {"path": f"f{n}.py"}}
    return [
        {"role": "user", "content": f"step {n}: read f{n}.py"},
        {
            "role": "assistant",
            "content": [{"type": "tool_call", **call}],
            "usage": {"input_tokens": 900 + n},
        },
        {"role": "tool", "content": "x = 1\n" * n, "tool_call_id": f"c{n}"},
    ]


def _requests(key: str, other_key: str) -> list[tuple[dict[str, str], Any]]:
    """(headers, body) of a session's appends: good ones, a retried one, a replaced
    tail, a stale one, and every kind of bad one."""
    ok = _auth(key)
    return [
        (ok, {"messages": _said(0)}),
        (ok, {"messages": _said(1)}),
        ({**ok, "Idempotency-Key": "batch-2"}, {"messages": _said(2)}),
        ({**ok, "Idempotency-Key": "batch-2"}, {"messages": _said(2)}),  # a retry
        (ok, {"messages": _said(3), "start": 3, "if_revision": 3}),
        (ok, {"messages": _said(4), "start": 3, "if_revision": 1}),  # stale: 409
        (ok, {"messages": [], "start": 0}),  # no if_revision: 400
        (ok, {"messages": [{"role": "wizard", "content": "?"}]}),  # bad role: 400
        (ok, {"messages": "not a list"}),
        (ok, b"{not json"),
        ({"Authorization": "Bearer cs_not-a-key"}, {"messages": _said(5)}),  # 401
        (_auth(other_key), {"messages": _said(5)}),  # not the owner's run: 404
        (ok, {"messages": _said(6)}),
    ]


def _answers(base: str, run_id: str, requests: list[tuple[dict[str, str], Any]]) -> list[Any]:
    out = []
    with httpx.Client(base_url=base) as http:
        for headers, body in requests:
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            got = http.post(
                f"/api/runs/{run_id}/messages/",
                content=raw,
                headers={**headers, "Content-Type": "application/json"},
            )
            text = got.text.replace(run_id, "RUN").replace(base, "BASE")
            answer = json.loads(text)
            answer.pop("created", None)
            kept = {(k, _directives(k, v)) for k, v in got.headers.items() if k not in VARYING}
            out.append((got.status_code, sorted(kept), answer))
    return out


def _directives(name: str, value: str) -> str:
    """A header's value; a policy's directives in one order (django-csp's varies)."""
    if name == "content-security-policy":
        return "; ".join(sorted(value.split("; ")))
    return value


def test_an_append_through_the_lane_is_answered_as_django_answers_it(servers, alice, bob):
    lane, plain = servers
    key, other_key = create_token(alice, "lane")[1], create_token(bob, "other")[1]
    requests = _requests(key, other_key)
    through_lane = _answers(lane, _new_run(lane, key), requests)
    through_django = _answers(plain, _new_run(plain, key), requests)
    for a, b in zip(through_lane, through_django, strict=True):
        assert a == b
    statuses = [status for status, _, _ in through_lane]
    assert statuses == [200, 200, 200, 200, 200, 409, 400, 400, 400, 400, 401, 404, 200]
    assert through_lane[3][2] == through_lane[2][2]  # the retry: the first answer
    last = through_lane[-1][2]
    assert last["messages"] == 9 and last["requests"] == 3 and last["live"] is True
    for run in Run.objects.all():
        assert run.message_count == Message.objects.filter(run=run).count() == 9
        assert run.requests_with_usage == 3 and run.peak_measured_context == 906


def test_a_body_over_the_limit_is_refused_through_the_lane(servers, alice, settings):
    lane, _ = servers
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2_000
    key = create_token(alice, "lane")[1]
    run_id = _new_run(lane, key)
    body = {"messages": [{"role": "user", "content": "x" * 5_000}]}
    got = httpx.post(f"{lane}/api/runs/{run_id}/messages/", json=body, headers=_auth(key))
    assert got.status_code == 413 and "send fewer messages per request" in got.json()["error"]
    assert Run.objects.get(public_id=run_id).message_count == 0


def _connections_opened(base: str, key: str, run_ids: list[str], appends: int) -> int:
    """Connections opened while each run gets `appends` appends, all runs at once (a
    client each, as agents streaming side by side)."""
    opened = []

    def seen(sender: object, connection: object, **kwargs: object) -> None:
        opened.append(threading.current_thread().name)

    def stream(run_id: str) -> list[int]:
        with httpx.Client(base_url=base, headers=_auth(key)) as http:
            return [
                http.post(
                    f"/api/runs/{run_id}/messages/",
                    json={"messages": [{"role": "user", "content": f"message {n}"}]},
                ).status_code
                for n in range(appends)
            ]

    connection_created.connect(seen)
    try:
        with ThreadPoolExecutor(len(run_ids)) as clients:
            statuses = [s for done in clients.map(stream, run_ids) for s in done]
    finally:
        connection_created.disconnect(seen)
    assert statuses == [200] * len(run_ids) * appends
    return len(opened)


def test_the_lane_keeps_its_connections_where_django_opens_one_per_append(servers, alice):
    lane, plain = servers
    key = create_token(alice, "lane")[1]
    through_lane = _connections_opened(lane, key, [_new_run(lane, key) for _ in range(4)], 10)
    through_django = _connections_opened(plain, key, [_new_run(plain, key) for _ in range(4)], 10)
    assert 1 <= through_lane <= append_lane.threads()
    assert through_django >= 40
    assert Message.objects.count() == 80


def test_an_append_to_a_run_still_being_imported_is_not_found(servers, alice):
    lane, _ = servers
    key = create_token(alice, "lane")[1]
    run_id = _new_run(lane, key)
    Run.objects.filter(public_id=run_id).update(ready=False)
    body = {"messages": [{"role": "user", "content": "go"}]}
    got = httpx.post(f"{lane}/api/runs/{run_id}/messages/", json=body, headers=_auth(key))
    assert got.status_code == 404 and run_id in got.json()["error"]
    assert Message.objects.count() == 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs a database server")
def test_a_connection_the_server_dropped_is_replaced(servers, alice):
    lane, _ = servers
    key = create_token(alice, "lane")[1]
    run_id = _new_run(lane, key)
    url = f"{lane}/api/runs/{run_id}/messages/"
    for n in range(8):  # every lane thread has its connection
        httpx.post(
            url, json={"messages": [{"role": "user", "content": str(n)}]}, headers=_auth(key)
        )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    statuses = [
        httpx.post(
            url, json={"messages": [{"role": "user", "content": f"after {n}"}]}, headers=_auth(key)
        ).status_code
        for n in range(12)
    ]
    # Each lane thread finds its connection gone before using it and opens another.
    assert statuses == [200] * 12
    run = Run.objects.get(public_id=run_id)
    assert run.message_count == Message.objects.filter(run=run).count() == 8 + statuses.count(200)
