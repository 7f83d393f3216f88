"""Live runs: API tokens, the streaming API (create, append, replace the tail), the
dashboard following a growing run, and tail_run following a growing log file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from contextsim.formats import parse_path
from webapp.models import ApiToken, Message, Run, RunSkeleton
from webapp.services.api_tokens import create_token

pytestmark = pytest.mark.django_db

HEADER = {"contextsim": 1, "runs": [{"title": "live agent", "messages": []}]}


def _round(i: int) -> list[dict[str, object]]:
    call = {"type": "tool_call", "id": f"c{i}", "name": "read", "arguments": f'{{"n": {i}}}'}
    result = {"type": "tool_result", "call_id": f"c{i}", "text": f"chapter {i} " * 300}
    return [
        {"role": "assistant", "content": [call], "usage": {"input_tokens": 100 + i}},
        {"role": "tool", "content": [result]},
    ]


@pytest.fixture
def key(alice) -> str:
    return create_token(alice, "agent")[1]


def _api(client: Client, key: str, url: str, body: object) -> tuple[int, dict]:
    response = client.post(
        url,
        json.dumps(body),
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    return response.status_code, response.json()


@pytest.fixture
def live(key) -> tuple[Client, str]:
    client = Client()
    status, body = _api(client, key, reverse("api-runs"), HEADER)
    assert status == 201
    return client, body["runs"][0]["id"]


def _append(client, key, run_id, messages, **extra):
    return _api(client, key, reverse("api-append", args=[run_id]), {"messages": messages, **extra})


def test_a_run_streamed_message_by_message_is_stored_and_counted(key, live, alice):
    client, run_id = live
    run = Run.objects.get(public_id=run_id)
    assert run.owner == alice and run.visibility == "private" and run.last_append is not None
    status, body = _append(client, key, run_id, [{"role": "user", "content": "read them all"}])
    assert status == 200 and body["messages"] == 1 and body["requests"] == 0
    for i in range(3):
        status, body = _append(client, key, run_id, _round(i))
    assert body["messages"] == 7 and body["requests"] == 3 and body["revision"] == 4
    run.refresh_from_db()
    assert run.tool_call_count == 3 and run.requests_with_usage == 3
    assert run.peak_measured_context == 102
    counts = Message.objects.get(run=run, index=2).counts
    assert counts["o200k"] > 300 and set(counts) >= {"chars4", "script", "cl100k", "o200k"}
    # The skeletons are rebuilt from the stored counts when the dashboard asks.
    assert not RunSkeleton.objects.filter(run=run).exists()
    alice_client = Client()
    alice_client.force_login(alice)
    page = alice_client.get(reverse("run", args=[run_id])).content.decode()
    assert "● live" in page and "7 messages so far" in page and "3 requests" in page


def test_the_tail_of_a_run_can_be_replaced_and_earlier_steps_stay(key, live):
    client, run_id = live
    _append(client, key, run_id, [{"role": "user", "content": "go"}, *_round(0), *_round(1)])
    before = list(Message.objects.filter(run__public_id=run_id, index__lt=3).values("content_hash"))
    status, body = _append(client, key, run_id, _round(9), start=3)
    assert status == 200 and body["messages"] == 5
    stored = Message.objects.filter(run__public_id=run_id).order_by("index")
    assert list(stored.filter(index__lt=3).values("content_hash")) == before
    assert "chapter 9" in json.dumps(stored.last().parts)  # type: ignore[union-attr]
    assert Run.objects.get(public_id=run_id).tool_call_count == 2


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (
            {"messages": [{"role": "user", "content": "ok"}, {"role": "robot"}]},
            400,
            "request body: $.messages[1].role: expected one of",
        ),
        ({"messages": "hi"}, 400, 'request body: expected {"messages": [...]}'),
        ({"messages": [], "start": 5}, 400, "start: expected a position from 0 to 0, got 5"),
        ({"messages": [], "start": "1"}, 400, "$.start: expected a whole number, got '1'"),
    ],
)
def test_bad_messages_are_refused_naming_where_and_nothing_is_saved(
    key, live, body, status, message
):
    client, run_id = live
    got, answer = _api(client, key, reverse("api-append", args=[run_id]), body)
    assert got == status and message in answer["error"]
    assert Run.objects.get(public_id=run_id).message_count == 0
    assert not Message.objects.filter(run__public_id=run_id).exists()


def test_invalid_json_and_bad_logs_are_named(key):
    client = Client()
    response = client.post(
        reverse("api-runs"),
        "{nope",
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 400 and "request body" in response.json()["error"]
    assert Run.objects.count() == 0


def test_the_api_needs_an_active_token_of_the_runs_owner(key, live, alice, bob):
    client, run_id = live
    response = client.post(reverse("api-runs"), json.dumps(HEADER), content_type="application/json")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer"
    bobs_key = create_token(bob, "b")[1]
    status, body = _append(client, bobs_key, run_id, [])
    assert status == 404 and body["error"] == f"no run {run_id} of yours"
    token = ApiToken.objects.get(owner=alice)
    assert token.last_used is not None
    token.revoked = token.created
    token.save()
    status, _ = _append(client, key, run_id, [])
    assert status == 401


def test_an_open_dashboard_is_told_when_the_run_grows(key, live, alice):
    client, run_id = live
    viewer = Client()
    viewer.force_login(alice)
    url = reverse("run-live", args=[run_id])
    revision = Run.objects.get(public_id=run_id).revision
    assert viewer.get(url, {"revision": revision}).status_code == 204
    _append(client, key, run_id, [{"role": "user", "content": "go"}])
    grew = viewer.get(url, {"revision": revision})
    assert grew.status_code == 200 and grew["HX-Trigger"] == "contextsim:grew"
    assert f"revision={revision + 1}" in grew.content.decode()
    controls = viewer.get(reverse("run", args=[run_id])).content.decode()
    assert "contextsim:grew from:body" in controls
    Run.objects.filter(public_id=run_id).update(last_append=None)
    stopped = viewer.get(url, {"revision": revision + 1}).content.decode()
    assert "hx-trigger" not in stopped and "stopped following" in stopped


def test_the_token_page_shows_a_new_key_once_and_revokes(alice):
    client = Client()
    client.force_login(alice)
    created = client.post(reverse("tokens"), {"name": "<i>ci</i>"})
    html = created.content.decode()
    assert created.status_code == 201 and "cs_" in html and "&lt;i&gt;ci&lt;/i&gt;" in html
    token = ApiToken.objects.get()
    key = html.split('id="new-key">')[1].split("<")[0]
    assert key.startswith(token.prefix) and token.digest not in html
    assert key not in client.get(reverse("tokens")).content.decode()
    client.post(reverse("revoke-token", args=[token.pk]))
    token.refresh_from_db()
    assert token.revoked is not None


def _write_lines(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(lines))


def test_tail_run_follows_a_growing_claude_code_session(corpus: Path, tmp_path: Path, alice):
    source = corpus / "claude_code" / "ccviewer_fe5e1c67.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    growing = tmp_path / "session.jsonl"
    for cut in (len(lines) // 3, 2 * len(lines) // 3 + 1, len(lines)):
        _write_lines(growing, lines[:cut])
        call_command("tail_run", str(growing), "--once", "--owner", "alice")
    # Followed in three goes, the stored runs are what one import of the whole file gives.
    full = {r.session_id: r for r in parse_path(source).runs}
    stored = {r.session_id: r for r in Run.objects.filter(owner=alice)}
    assert stored.keys() == full.keys()
    for session, run in full.items():
        hashes = list(
            Message.objects.filter(run=stored[session])
            .order_by("index")
            .values_list("content_hash", flat=True)
        )
        from contextsim.estimators import content_key

        assert hashes == [content_key(m) for m in run.messages], run.title
        assert stored[session].request_count == sum(m.role == "assistant" for m in run.messages)
    main = next(r for r in stored.values() if not r.subagent)
    assert main.collection is not None
    assert all(r.collection_id == main.collection_id for r in stored.values())


def test_tail_run_names_a_missing_or_unreadable_file(tmp_path: Path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("tail_run", str(tmp_path / "missing.jsonl"), "--once")
    bad = tmp_path / "bad.json"
    bad.write_text('{"contextsim": 7, "runs": []}')
    with pytest.raises(CommandError, match="unsupported contextsim version 7"):
        call_command("tail_run", str(bad), "--once")
    assert Run.objects.count() == 0


def test_the_runs_list_marks_a_live_run(key, live, alice):
    client = Client()
    client.force_login(alice)
    html = client.get(reverse("runs")).content.decode()
    assert 'class="badge live-badge">live</span>' in html
    Run.objects.update(last_append=None)
    assert "live-badge" not in client.get(reverse("runs")).content.decode()
