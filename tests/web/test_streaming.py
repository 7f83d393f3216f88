"""Live runs: API tokens, the streaming API (create, append, replace the tail), the
dashboard following a growing run, and tail_run following a growing log file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextsim import model as core
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.ingest.detect import parse_path
from webapp.access.services.tokens import LAST_USED_EVERY, create_token, owner_of
from webapp.estimators.reads import request_rows
from webapp.models import ApiToken, Message, Run, RunSkeleton
from webapp.store.actions import derivation
from webapp.store.actions.rows import LIVE_COUNTED

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
    assert counts["chars4"] > 300 and set(counts) == set(LIVE_COUNTED)
    assert not {"cl100k", "o200k"} & set(counts)
    # No skeleton of its current revision is stored: the dashboard builds it from the
    # stored counts, and a job stores it once the run is idle.
    assert not RunSkeleton.objects.filter(run=run, revision=run.revision).exists()
    # The real tokenizers count a live run when a view needs them (chapter 0's result),
    # and the view stores nothing.
    rows = request_rows(run)
    assert rows[1].estimates["o200k"] - rows[0].estimates["o200k"] > 300
    assert "o200k" not in Message.objects.get(run=run, index=2).counts
    # The job keeps them with the messages for every later reader.
    derivation.do_derive(run)
    counted = Message.objects.get(run=run, index=2).counts
    assert counted["o200k"] == ESTIMATORS["o200k"].count("chapter 0 " * 300) + MESSAGE_OVERHEAD
    assert RunSkeleton.objects.filter(run=run, revision=run.revision).count() == len(ESTIMATORS)
    alice_client = Client()
    alice_client.force_login(alice)
    page = alice_client.get(reverse("run", args=[run_id])).content.decode()
    assert "● live" in page and "7 messages so far" in page and "3 requests" in page


def test_the_tail_of_a_run_can_be_replaced_and_earlier_steps_stay(key, live):
    client, run_id = live
    _, seen = _append(
        client, key, run_id, [{"role": "user", "content": "go"}, *_round(0), *_round(1)]
    )
    before = list(Message.objects.filter(run__public_id=run_id, index__lt=3).values("content_hash"))
    status, body = _append(client, key, run_id, _round(9), start=3, if_revision=seen["revision"])
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
        (
            {"messages": [], "start": 5, "if_revision": 0},
            400,
            "start: expected a position from 0 to 0, got 5",
        ),
        ({"messages": [], "start": 0}, 400, "a replacing append needs $.if_revision"),
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


def test_a_keys_last_use_is_written_at_most_once_a_minute(key, alice):
    first = owner_of(key)
    used = ApiToken.objects.get(owner=alice).last_used
    assert first == alice and used is not None
    assert owner_of(key) == alice
    assert ApiToken.objects.get(owner=alice).last_used == used
    ApiToken.objects.filter(owner=alice).update(last_used=used - LAST_USED_EVERY)
    owner_of(key)
    assert ApiToken.objects.get(owner=alice).last_used > used


def test_an_open_dashboard_is_told_when_the_run_grows(key, live, alice):
    client, run_id = live
    viewer = Client()
    viewer.force_login(alice)
    url = reverse("run-live", args=[run_id])
    revision = Run.objects.get(public_id=run_id).revision
    assert viewer.get(url, {"revision": revision}).status_code == 204
    _append(client, key, run_id, [{"role": "user", "content": "go"}])
    grew = viewer.get(url, {"revision": revision})
    assert grew.status_code == 200 and json.loads(grew["HX-Trigger"]) == {"contextsim:grew": {}}
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
        from contextsim.counting.estimators import content_key

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


def test_a_view_stores_no_skeleton_and_one_built_while_the_run_grows_is_not_the_newer(
    key, live, monkeypatch
):
    from webapp.store import reads as derived
    from webapp.store.actions import derivation
    from webapp.store.cache import CACHE

    client, run_id = live
    _append(client, key, run_id, [{"role": "user", "content": "go"}, *_round(0)])
    run = Run.objects.get(public_id=run_id)
    RunSkeleton.objects.filter(run=run).delete()
    real = derived.stored_run

    def read_then_grow(stored):
        found = real(stored)  # the messages as they were ...
        _append(client, key, run_id, _round(1))  # ... and an append commits meanwhile
        return found

    monkeypatch.setattr(derived, "stored_run", read_then_grow)
    derived.skeleton_of(run, "chars4")
    assert not RunSkeleton.objects.filter(run=run).exists()
    monkeypatch.setattr(derived, "stored_run", real)
    run.refresh_from_db()
    fresh = derived.skeleton_of(run, "chars4")
    assert fresh.size == 5 == run.message_count
    assert not RunSkeleton.objects.filter(run=run).exists()  # a view writes nothing
    # Extended from what was read (the builder kept), it is what a fresh build gives.
    CACHE.clear()
    assert derived.skeleton_of(run, "chars4") == fresh
    derivation.do_derive(run)  # the job stores it, for the run's revision
    assert RunSkeleton.objects.get(run=run, estimator="chars4").revision == run.revision


def _jsonl(path: Path, *lines: dict) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_tail_run_never_mistakes_another_file_with_the_same_title_for_its_run(tmp_path, alice):
    header = {"contextsim": 1, "type": "run", "title": "my agent"}
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _jsonl(first, header, {"type": "message", "role": "user", "content": "one"})
    _jsonl(second, header, {"type": "message", "role": "user", "content": "other"})
    call_command("tail_run", str(first), "--once", "--owner", "alice")
    call_command("tail_run", str(second), "--once", "--owner", "alice")
    texts = sorted(json.dumps(m.parts) for m in Message.objects.all())
    assert len(texts) == 2 and "one" in texts[0] + texts[1] and "other" in texts[0] + texts[1]
    assert Run.objects.count() == 2
    # The same file followed again later finds its own run, not a new one.
    _jsonl(
        first,
        header,
        {"type": "message", "role": "user", "content": "one"},
        {"type": "message", "role": "assistant", "content": "done"},
    )
    call_command("tail_run", str(first), "--once", "--owner", "alice")
    assert Run.objects.count() == 2
    assert sorted(Run.objects.values_list("message_count", flat=True)) == [1, 2]


def test_tail_run_takes_a_compaction_written_later_and_builds_a_new_skeleton(tmp_path, alice):
    header = {"contextsim": 1, "type": "run", "title": "t", "model": "m1"}
    log = tmp_path / "c.jsonl"
    user = {"type": "message", "role": "user", "content": "go"}
    _jsonl(log, header, user)
    call_command("tail_run", str(log), "--once", "--owner", "alice")
    run = Run.objects.get()
    before = run.revision
    _jsonl(
        log,
        {**header, "model": "m2"},
        user,
        {"type": "compaction", "before_message": 1, "pre_tokens": 900, "trigger": "auto"},
    )
    call_command("tail_run", str(log), "--once", "--owner", "alice")
    run.refresh_from_db()
    assert run.model == "m2" and run.compactions[0]["pre_tokens"] == 900
    assert run.revision == before + 1


def test_impossible_figures_in_a_body_are_refused_as_bad_input(key, live):
    client, run_id = live
    huge = {"role": "assistant", "content": "x", "usage": {"input_tokens": 10**30}}
    status, body = _append(client, key, run_id, [huge])
    assert status == 400
    assert body["error"] == (
        "request body: $.messages[0].usage.input_tokens: expected a number of tokens from 0 "
        "to 999,999,999,999"
    )
    bad = {"contextsim": 1, "runs": [{"title": "t", "messages": [], "compactions": 5}]}
    status, body = _api(client, key, reverse("api-runs"), bad)
    assert status == 400 and "$.runs[0].compactions: expected a list, found int" in body["error"]
    assert Run.objects.count() == 1


def test_an_unexpected_failure_is_a_json_500_and_saves_nothing(key, live, monkeypatch):
    client, run_id = live

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("webapp.store.actions.appends.message_row", broken)
    status, body = _append(client, key, run_id, [{"role": "user", "content": "go"}])
    assert status == 500 and body == {"error": "internal error (see the server log)"}
    assert Run.objects.get(public_id=run_id).message_count == 0


def test_runs_created_through_the_api_group_a_session_with_its_subagents(key):
    main = {"title": "main", "session_id": "s1", "messages": []}
    sub = {
        "title": "sub",
        "session_id": "s2",
        "parent_session_id": "s1",
        "subagent": True,
        "messages": [],
    }
    status, body = _api(Client(), key, reverse("api-runs"), {"contextsim": 1, "runs": [main, sub]})
    assert status == 201 and len(body["runs"]) == 2
    runs = list(Run.objects.order_by("id"))
    assert runs[0].collection is not None and runs[0].collection_id == runs[1].collection_id


def test_a_deactivated_users_key_stops_working(key, live, alice):
    client, run_id = live
    alice.is_active = False
    alice.save()
    status, _ = _append(client, key, run_id, [])
    assert status == 401


def test_an_estimator_report_of_the_old_text_is_not_read_after_an_append(key, live, alice):
    from contextsim.counting.estimators import ESTIMATORS
    from webapp.models import EstimatorReport
    from webapp.store import reads

    client, run_id = live
    run = Run.objects.get(public_id=run_id)
    stale = {"total": dict.fromkeys(ESTIMATORS, 0), "stale": True}
    EstimatorReport.objects.create(run=run, reference="o200k", data=stale, revision=run.revision)
    assert reads.estimator_report(run, "o200k") == (stale, True)
    _append(client, key, run_id, [{"role": "user", "content": "новый текст"}])
    run.refresh_from_db()
    report, stored = reads.estimator_report(run, "o200k")
    assert not stored and "stale" not in report and report["total"]["chars"] > 0


def test_a_retried_batch_with_its_idempotency_key_is_applied_once(key, live):
    client, run_id = live
    url = reverse("api-append", args=[run_id])
    body = json.dumps({"messages": [{"role": "user", "content": "go"}, *_round(0)]})
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": "batch-1"}
    first = client.post(url, body, content_type="application/json", headers=headers)
    again = client.post(url, body, content_type="application/json", headers=headers)
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert Run.objects.get(public_id=run_id).message_count == 3
    other = {**headers, "Idempotency-Key": "batch-2"}
    client.post(url, body, content_type="application/json", headers=other)
    assert Run.objects.get(public_id=run_id).message_count == 6


def test_a_stale_replacing_append_is_refused_with_the_current_revision(key, live):
    client, run_id = live
    _, seen = _append(client, key, run_id, [{"role": "user", "content": "go"}, *_round(0)])
    _append(client, key, run_id, _round(1))  # a later batch moved the run on
    status, answer = _append(client, key, run_id, _round(7), start=1, if_revision=seen["revision"])
    current = Run.objects.get(public_id=run_id)
    assert status == 409 and f"revision {current.revision} with 5 messages" in answer["error"]
    assert current.message_count == 5
    assert "chapter 7" not in json.dumps(list(Message.objects.filter(run=current).values("parts")))


@pytest.mark.django_db(transaction=True)
def test_concurrent_streams_with_retries_lose_and_duplicate_nothing(live_server, alice):
    from django.db import connection

    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        pytest.skip(
            "the in-memory test database locks whole tables under concurrent writers "
            "(shared cache); the served SQLite is a WAL file, and CI runs this on PostgreSQL"
        )
    import random
    import threading

    key = create_token(alice, "agent")[1]
    streams, batches = 4, 25
    ids = []
    for i in range(streams):
        header = {"contextsim": 1, "runs": [{"title": f"stream {i}", "messages": []}]}
        ids.append(_post(live_server.url + "/api/runs/", key, header, "setup")[1]["runs"][0]["id"])
    failures: list[str] = []

    def stream(n: int) -> None:
        rng = random.Random(n)
        url = f"{live_server.url}/api/runs/{ids[n]}/messages/"
        for b in range(batches):
            body = {"messages": [{"role": "user", "content": f"s{n} b{b} m{j}"} for j in range(4)]}
            for _ in range(1 + rng.randrange(3)):  # the same batch sent 1-3 times
                status, _ = _post(url, key, body, f"s{n}-b{b}")
                if status != 200:
                    failures.append(f"{n}/{b}: {status}")

    threads = [threading.Thread(target=stream, args=(n,)) for n in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    for n, run_id in enumerate(ids):
        texts = [
            m["parts"][0]["text"]
            for m in Message.objects.filter(run__public_id=run_id).order_by("index").values("parts")
        ]
        expected = [f"s{n} b{b} m{j}" for b in range(batches) for j in range(4)]
        assert texts == expected  # none lost, none twice, in order


def _post(url, key, body, idempotency):
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "Idempotency-Key": idempotency,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_a_skeleton_after_appends_is_extended_and_equals_one_built_afresh(alice):
    from contextsim.counting.estimators import ESTIMATORS
    from webapp.store import reads as derived
    from webapp.store.actions.appends import do_append_messages, do_create_live_run
    from webapp.store.cache import CACHE

    def said(i: int) -> core.Message:
        role = "user" if i % 2 == 0 else "assistant"
        return core.Message(role, (core.TextPart(f"message {i} Привет"),))

    run = do_create_live_run(alice, core.Run("live", tuple(said(i) for i in range(4))))
    est = ESTIMATORS["o200k"]
    derived.skeleton_of(run, "o200k", est)  # built whole; its builder is kept
    fed = []
    real = derived._extended

    def spy(r, e):
        out = real(r, e)
        fed.append(out is not None)
        return out

    for i in range(4, 10):
        run = do_append_messages(run, [said(i)])
        assert derived.skeleton_of(run, "o200k", est).size == i + 1
    derived._extended = spy
    try:
        run = do_append_messages(run, [said(10), said(11)])
        extended = derived.skeleton_of(run, "o200k", est)
    finally:
        derived._extended = real
    assert fed == [True]
    CACHE.clear()
    RunSkeleton.objects.filter(run=run).delete()
    assert derived.skeleton_of(run, "o200k", est) == extended


def test_a_tail_replaced_by_start_builds_the_skeleton_afresh(alice):
    from contextsim.counting.estimators import ESTIMATORS
    from webapp.store import reads as derived
    from webapp.store.actions.appends import do_append_messages, do_create_live_run

    first = [
        core.Message("user", (core.TextPart("a"),)),
        core.Message("assistant", (core.TextPart("b"),)),
    ]
    run = do_create_live_run(alice, core.Run("live", tuple(first)))
    est = ESTIMATORS["chars4"]
    derived.skeleton_of(run, "chars4", est)
    run = do_append_messages(run, [core.Message("assistant", (core.TextPart("c" * 400),))], start=1)
    assert run.rewritten == run.revision
    sk = derived.skeleton_of(run, "chars4", est)
    assert sk.size == 2 and sk.tokens[1] == 4 + 100


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.booleans(), st.none() | st.integers(0, 10**6)), max_size=4),
            st.none() | st.integers(0, 6),
        ),
        max_size=8,
    )
)
def test_figures_after_appends_and_replaced_tails_equal_those_read_from_every_message(alice, steps):
    from webapp.store.actions import appends as streaming

    run = streaming.do_create_live_run(alice, core.Run("figures", ()))
    for batch, start in steps:
        messages = [
            core.Message(
                "assistant" if answer else "user",
                (core.TextPart("x"),),
                core.Usage(used) if answer and used is not None else None,
            )
            for answer, used in batch
        ]
        start = None if start is None else min(start, run.message_count)
        run = streaming.do_append_messages(run, messages, start)
        assert {
            "request_count": run.request_count,
            "requests_with_usage": run.requests_with_usage,
            "peak_measured_context": run.peak_measured_context,
        } == streaming._figures(run)


def test_a_followed_run_keeps_only_the_revision_it_grows_from_cached(key, live):
    from contextsim.counting import memory as memo
    from webapp.store import reads as derived
    from webapp.store.cache import CACHE

    client, run_id = live
    CACHE.clear()
    for i in range(4):  # appends, each followed by a view
        _append(client, key, run_id, _round(i))
        run = Run.objects.get(public_id=run_id)
        derived.skeleton_of(run, "chars4")
    assert CACHE.revisions(run_id, "chars4") == [run.revision - 1, run.revision]
    # The newest was extended from the one kept before it.
    newest = CACHE.skeleton((run_id, "chars4", run.revision))
    older = CACHE.skeleton((run_id, "chars4", run.revision - 1))
    assert newest is not None and newest.memory[memo._GREW_FROM]() is older
