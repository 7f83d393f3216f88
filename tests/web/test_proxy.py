"""The capture proxy with the real `anthropic` and `openai` SDKs, against a fake
upstream on loopback (tests/upstream.py): what the client gets is what the upstream
sent, byte for byte, and every call is recorded as a request of a live run."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from django.apps import apps
from django.db import connection

from tests.upstream import Reply, Upstream, serving
from webapp.access.services.tokens import create_token
from webapp.models import CapturedCall, Run

PROVIDER_KEY = "sk-provider-secret-0123456789abcdef"
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file of the project.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


@pytest.fixture
def upstream() -> Upstream:
    return Upstream()


@pytest.fixture
def proxy(transactional_db, settings, upstream: Upstream) -> Iterator[str]:  # type: ignore[no-untyped-def]
    from webapp.asgi import application

    with serving(upstream) as fake:
        settings.UPSTREAM_ANTHROPIC = fake
        settings.UPSTREAM_OPENAI = fake
        with serving(application) as url:
            yield url


@pytest.fixture
def key(alice) -> str:  # type: ignore[no-untyped-def]
    return create_token(alice, "proxy")[1]


def claude(proxy: str, key: str, **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key=PROVIDER_KEY,
        base_url=f"{proxy}/proxy/anthropic",
        default_headers={"X-Contextsim-Key": key, **options.pop("headers", {})},
        max_retries=0,
        **options,
    )


def gpt(proxy: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(
        api_key=PROVIDER_KEY,
        base_url=f"{proxy}/proxy/k/{key}/openai/v1",
        max_retries=0,
    )


def recorded(calls: int) -> list[CapturedCall]:
    """The captured calls once `calls` of them are written (recording follows the
    answer)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = list(CapturedCall.objects.order_by("id"))
        if len(found) >= calls:
            return found
        time.sleep(0.02)
    raise AssertionError(f"{CapturedCall.objects.count()} calls recorded, expected {calls}")


def test_anthropic_calls_become_one_live_run_with_system_tools_and_usage(proxy, key, upstream):
    client = claude(proxy, key)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Read the README, please."}]
    upstream.script(Reply(calls=[("read_file", {"path": "README.md"})]), "It is a dashboard.")
    first = client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=200,
        system="You are terse.",
        tools=TOOLS,
        messages=history,
    )
    call = first.content[0]
    history += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "# contextsim"}],
        },
    ]
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=200,
        system="You are terse.",
        tools=TOOLS,
        messages=history,
    )
    calls = recorded(2)
    run = Run.objects.get()
    assert [c.run_id for c in calls] == [run.pk, run.pk]
    assert [c.step for c in calls] == [0, 1]
    assert run.format == "capture" and run.model == "claude-sonnet-4-5"
    kinds = list(run.messages.order_by("index").values_list("kind", flat=True))
    assert kinds == ["tools", "system", "user", "tool_call", "tool_result", "assistant"]
    answers = run.messages.filter(role="assistant").order_by("index")
    for seen, message in zip(upstream.seen, answers, strict=True):
        # The fake measured input as a quarter of the bytes it received.
        assert message.usage_input == len(seen.body) // 4
        assert message.usage_cache_read == 7 and message.usage_cache_write == 3
    assert calls[1].params == {"model": "claude-sonnet-4-5", "max_tokens": 200}
    assert (
        calls[0].status == 200
        and calls[0].total_ms is not None
        and calls[0].first_byte_ms is not None
    )


def test_the_client_gets_the_upstreams_bytes_streamed_or_not(proxy, key, upstream):
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": "hi"}],
    }
    headers = {
        "x-api-key": PROVIDER_KEY,
        "anthropic-version": "2023-06-01",
        "x-contextsim-key": key,
    }
    url = f"{proxy}/proxy/anthropic/v1/messages"
    plain = httpx.post(url, json=body, headers=headers)
    with httpx.stream("POST", url, json={**body, "stream": True}, headers=headers) as streamed:
        pieces = list(streamed.iter_raw())
    assert plain.content == upstream.seen[0].sent
    assert b"".join(pieces) == upstream.seen[1].sent
    assert streamed.headers["content-type"] == "text/event-stream"
    assert plain.headers["x-fake"] == "1"
    recorded(2)


def test_a_streamed_anthropic_answer_is_recorded_as_the_sdk_assembles_it(proxy, key, upstream):
    upstream.script(Reply("Here it is.", [("read_file", {"path": "a/b.py", "lines": [1, 2]})]))
    client = claude(proxy, key)
    with client.messages.stream(
        model="claude-sonnet-4-5",
        max_tokens=100,
        tools=TOOLS,
        messages=[{"role": "user", "content": "go"}],
    ) as stream:
        final = stream.get_final_message()
    recorded(1)
    answer = Run.objects.get().messages.get(role="assistant")
    text = [p for p in answer.parts if p["type"] == "text"]
    call = [p for p in answer.parts if p["type"] == "tool_call"]
    assert text[0]["text"] == final.content[0].text
    assert json.loads(call[0]["arguments"]) == final.content[1].input
    assert answer.usage_output == final.usage.output_tokens
    assert answer.usage_input == final.usage.input_tokens


def test_openai_chat_completions_streamed_and_not_are_recorded(proxy, key, upstream):
    client = gpt(proxy, key)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Привет, что нового?"},
    ]
    first = client.chat.completions.create(model="gpt-5", messages=messages)
    messages += [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "再说一遍"},
    ]
    stream = client.chat.completions.create(
        model="gpt-5", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    calls = recorded(2)
    run = Run.objects.get()
    assert [c.streamed for c in calls] == [False, True]
    roles = list(run.messages.order_by("index").values_list("role", flat=True))
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    last = run.messages.order_by("index").last()
    assert last.parts[0]["text"] == text
    # OpenAI's prompt tokens include the cached ones; stored apart.
    assert last.usage_input + last.usage_cache_read == len(upstream.seen[1].body) // 4
    assert last.usage_cache_read == 5


def test_openai_responses_calls_are_recorded_with_instructions_and_tools(proxy, key, upstream):
    upstream.script(Reply(calls=[("shell", {"cmd": "ls"})]), "Done.")
    client = gpt(proxy, key)
    tools = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]
    first = client.responses.create(
        model="gpt-5-codex", instructions="You are Codex.", input="list files", tools=tools
    )
    call = first.output[0]
    items = [
        {"role": "user", "content": "list files"},
        {
            "type": "function_call",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        },
        {"type": "function_call_output", "call_id": call.call_id, "output": "README.md"},
    ]
    with client.responses.stream(
        model="gpt-5-codex", instructions="You are Codex.", input=items, tools=tools
    ) as s:
        final = s.get_final_response()
    recorded(2)
    run = Run.objects.get()
    kinds = list(run.messages.order_by("index").values_list("kind", flat=True))
    assert kinds == ["tools", "system", "user", "tool_call", "tool_result", "assistant"]
    assert run.messages.order_by("index").last().parts[0]["text"] == final.output_text


def test_upstream_errors_pass_through_unchanged_and_are_recorded(proxy, key, upstream):
    client = claude(proxy, key, headers={"x-fake-status": "529"})
    with pytest.raises(anthropic.APIStatusError) as raised:
        client.messages.create(
            model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    assert raised.value.status_code == 529
    assert raised.value.response.content == upstream.seen[0].sent
    call = recorded(1)[0]
    assert call.status == 529 and "fake failure" in call.error
    run = Run.objects.get()
    # The request was sent and got no answer: a pending request at the run's end.
    assert list(run.messages.values_list("role", flat=True)) == ["user"]
    assert call.step == 0


def test_an_unreachable_upstream_is_a_502_and_recorded(proxy, key, settings):
    settings.UPSTREAM_ANTHROPIC = "http://127.0.0.1:9"  # discard port: refused
    client = claude(proxy, key)
    with pytest.raises(anthropic.APIStatusError) as raised:
        client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    assert raised.value.status_code == 502
    call = recorded(1)[0]
    assert call.status == 0 and "unreachable" in call.error


def test_without_a_key_nothing_is_forwarded(proxy, upstream):
    answer = httpx.post(f"{proxy}/proxy/anthropic/v1/messages", json={"model": "m", "messages": []})
    assert answer.status_code == 401
    assert "X-Contextsim-Key" in answer.json()["error"]["message"]
    assert upstream.seen == []
    wrong = httpx.post(
        f"{proxy}/proxy/anthropic/v1/messages", json={}, headers={"x-contextsim-key": "cs_wrong"}
    )
    assert wrong.status_code == 401 and upstream.seen == []


def test_local_mode_needs_no_key(proxy, upstream, settings, db):
    settings.LOCAL_USER = "local"
    client = anthropic.Anthropic(
        api_key=PROVIDER_KEY, base_url=f"{proxy}/proxy/anthropic", max_retries=0
    )
    client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    recorded(1)
    assert Run.objects.get().owner.username == "local"


def test_keys_reach_the_upstream_and_never_the_database(proxy, key, upstream):
    claude(proxy, key).messages.create(
        model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
    )
    secrets = {
        "x-api-key": PROVIDER_KEY,
        "authorization": "Bearer sk-bearer-secret-42",
        "cookie": "sid=cookie-secret-7",
    }
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "y"}]}
    httpx.post(f"{proxy}/proxy/k/{key}/anthropic/v1/messages", json=body, headers=secrets)
    recorded(2)
    assert any(PROVIDER_KEY in value for value in upstream.seen[0].headers.values())
    sent = upstream.seen[1].headers
    assert all(sent[name] == secrets[name] for name in ("x-api-key", "authorization"))
    assert "cookie" not in sent  # a browser's cookies for this server are not the provider's
    assert not any(name.startswith("x-contextsim") for s in upstream.seen for name in s.headers)
    for secret in (PROVIDER_KEY, "sk-bearer-secret-42", "cookie-secret-7", key):
        assert _tables_holding(secret) == []


def _tables_holding(secret: str) -> list[str]:
    """Every table with a text column holding `secret` anywhere."""
    found = []
    with connection.cursor() as cursor:
        for model in apps.get_models():
            table = model._meta.db_table
            for field in model._meta.concrete_fields:
                if field.get_internal_type() in ("CharField", "TextField", "JSONField"):
                    column = connection.ops.quote_name(field.column)
                    quoted = connection.ops.quote_name(table)
                    cursor.execute(
                        f"SELECT COUNT(*) FROM {quoted} WHERE CAST({column} AS TEXT) LIKE %s",
                        [f"%{secret}%"],
                    )
                    if cursor.fetchone()[0]:
                        found.append(f"{table}.{field.column}")
    return found


def test_calls_of_one_session_share_a_collection_and_side_calls_are_subagents(proxy, key, upstream):
    client = claude(proxy, key, headers={"X-Contextsim-Session": "build-42"})
    main = [{"role": "user", "content": "Fix the bug."}]
    client.messages.create(model="m", max_tokens=5, system="Main agent.", messages=main)
    client.messages.create(
        model="m",
        max_tokens=5,
        system="Subagent.",
        messages=[{"role": "user", "content": "Search the code."}],
    )
    recorded(2)
    runs = list(Run.objects.order_by("id"))
    assert len(runs) == 2
    assert runs[0].collection_id is not None and runs[0].collection_id == runs[1].collection_id
    assert [r.subagent for r in runs] == [False, True]
    assert runs[1].parent_session_id == "build-42"


def test_claude_codes_session_marker_groups_calls(proxy, key, upstream):
    client = claude(proxy, key)
    marker = {"user_id": "user_ab12_account_0f0f_session_6d1c1b1e-1111-4222-8333-944445555666"}
    for system in ("Main.", "Title generator."):
        client.messages.create(
            model="m",
            max_tokens=5,
            system=system,
            metadata=marker,
            messages=[{"role": "user", "content": "q"}],
        )
    recorded(2)
    sessions = sorted(Run.objects.values_list("session_id", flat=True))
    assert sessions[0] == "6d1c1b1e-1111-4222-8333-944445555666"
    assert Run.objects.filter(subagent=True).count() == 1


def test_a_continued_conversation_after_a_summary_is_a_compaction(proxy, key, upstream):
    summary = "The user asked to fix the login bug; we found it in auth.py line 40 and patched it."
    upstream.script("Looking.", summary, "Continuing.")
    client = claude(proxy, key, headers={"X-Contextsim-Session": "s1"})
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the login bug."}]
    client.messages.create(model="m", max_tokens=5, system="Agent.", messages=history)
    history += [
        {"role": "assistant", "content": "Looking."},
        {"role": "user", "content": "Summarize the conversation."},
    ]
    client.messages.create(model="m", max_tokens=5, system="Agent.", messages=history)
    continued = f"This session is being continued from a previous conversation. Summary: {summary}"
    client.messages.create(
        model="m", max_tokens=5, system="Agent.", messages=[{"role": "user", "content": continued}]
    )
    recorded(3)
    run = Run.objects.get()
    assert len(run.compactions) == 1
    boundary = run.compactions[0]["before_message"]
    first_after = run.messages.get(index=boundary)
    assert first_after.compact_summary and summary in first_after.parts[0]["text"]
    assert run.compactions[0]["pre_tokens"] == len(upstream.seen[1].body) // 4 + 10


def test_a_retried_failed_call_adds_only_its_answer(proxy, key, upstream):
    messages = [{"role": "user", "content": "x"}]
    with pytest.raises(anthropic.APIStatusError):
        claude(proxy, key, headers={"x-fake-status": "500"}).messages.create(
            model="m", max_tokens=5, messages=messages
        )
    claude(proxy, key).messages.create(model="m", max_tokens=5, messages=messages)
    calls = recorded(2)
    run = Run.objects.get()
    assert list(run.messages.order_by("index").values_list("role", flat=True)) == [
        "user",
        "assistant",
    ]
    assert [c.step for c in calls] == [0, 0]


def test_other_paths_pass_through_unrecorded(proxy, key, upstream):
    client = claude(proxy, key)
    counted = client.messages.count_tokens(
        model="m", messages=[{"role": "user", "content": "hello"}]
    )
    assert counted.input_tokens == len(upstream.seen[0].body) // 4
    listed = gpt(proxy, key).models.list()
    assert [m.id for m in listed] == ["fake-model"]
    time.sleep(0.2)
    assert CapturedCall.objects.count() == 0 and Run.objects.count() == 0


def test_a_client_that_leaves_mid_stream_ends_the_upstream_call(proxy, key, upstream):
    body = {
        "model": "m",
        "max_tokens": 5,
        "stream": True,
        "messages": [{"role": "user", "content": "x"}],
    }
    slow = {"x-contextsim-key": key, "x-fake-delay": "0.05", "x-fake-words": "400"}
    with httpx.stream("POST", f"{proxy}/proxy/anthropic/v1/messages", json=body, headers=slow) as r:
        pieces = r.iter_raw()
        next(pieces)
        next(pieces)
    call = recorded(1)[0]
    assert "client disconnected" in call.error
    # The whole answer takes over 100 pieces x 0.05 s; the proxy let go well before.
    assert call.total_ms is not None and call.total_ms < 2_000


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs a database server")
def test_a_connection_the_database_dropped_is_replaced_before_a_call(proxy, key, upstream):
    for _ in range(6):  # every thread that looks callers up has its connection
        claude(proxy, key).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    recorded(6)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    for _ in range(8):
        claude(proxy, key).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "y"}]
        )
    assert len(recorded(14)) == 14
