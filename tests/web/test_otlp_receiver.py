"""The OTLP/HTTP trace receiver, driven by clients nobody here wrote: the OpenTelemetry
SDK with its protobuf exporter (opentelemetry-exporter-otlp-proto-http) and its JSON
exporter (opentelemetry-exporter-otlp-json-http), gzip or not, and
opentelemetry-instrumentation-openai-v2 around the real `openai` SDK against the fake
upstream (tests/upstream.py). Spans become live runs; retries add nothing; bad bodies,
content types and keys get the answers the OTLP specification asks for."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from typing import Any

import pytest
import requests
from django.contrib.sessions.models import Session
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.json.http.trace_exporter import (
    OTLPSpanExporter as JSONSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from webapp.access.services.tokens import create_token
from webapp.models import Message, ReceivedSpan, Run, Visibility

pytestmark = pytest.mark.django_db(transaction=True)

SYSTEM = "You are a weather assistant."
ASK = "Weather in Paris?"
CALL = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
RESULT = {"type": "tool_call_response", "id": "call_1", "response": "rainy, 57°F"}
ANSWER = "It is rainy, 57°F."
USAGE = ((180, 18, 0), (230, 11, 128))  # input (cache included), output, cache read
WEATHER_ROLES = ["system", "user", "assistant", "tool", "assistant"]
"""The roles of the weather conversation's messages: a question, a call, its result,
the answer."""


@pytest.fixture
def key(alice) -> str:
    return create_token(alice, "otel")[1]


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _chat_attributes(sent: list[Any], reply: Any, usage: tuple[int, int, int]) -> dict[str, Any]:
    """A chat span's attributes, current GenAI conventions (messages as JSON text)."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
        "gen_ai.input.messages": json.dumps(sent),
        "gen_ai.output.messages": json.dumps([reply]),
        "gen_ai.usage.input_tokens": usage[0],
        "gen_ai.usage.output_tokens": usage[1],
        "gen_ai.usage.cache_read.input_tokens": usage[2],
    }


FIRST = _chat_attributes([_text("user", ASK)], {"role": "assistant", "parts": [CALL]}, USAGE[0])
SECOND = _chat_attributes(
    [
        _text("user", ASK),
        {"role": "assistant", "parts": [CALL]},
        {"role": "tool", "parts": [RESULT]},
    ],
    _text("assistant", ANSWER),
    USAGE[1],
)


def _recorded(*calls: dict[str, Any], **agent: Any) -> list[ReadableSpan]:
    """Finished SDK spans: an agent span (attributes `agent`) with one chat span per
    `calls`, started in that order."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.otlp")
    with tracer.start_as_current_span("invoke_agent weather", attributes=agent):
        for attributes in calls:
            with tracer.start_as_current_span("chat gpt-4o", attributes=attributes):
                pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def _url(live_server: Any, prefixed: bool = False) -> str:
    return f"{live_server.url}{'/otlp' if prefixed else ''}/v1/traces"


def _exporter(
    url: str, key: str | None, kind: str = "protobuf", gzip: bool = False
) -> SpanExporter:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if kind == "json":
        from opentelemetry.exporter.otlp.common.http import Compression as JSONCompression

        compression = JSONCompression.GZIP if gzip else JSONCompression.NONE
        return JSONSpanExporter(endpoint=url, headers=headers, compression=compression)
    compression = Compression.Gzip if gzip else Compression.NoCompression
    return OTLPSpanExporter(endpoint=url, headers=headers, compression=compression)


def _export(exporter: SpanExporter, spans: Sequence[ReadableSpan]) -> None:
    assert exporter.export(spans) == SpanExportResult.SUCCESS


def _run() -> Run:
    (run,) = Run.objects.filter(format="otel")
    return run


def _messages(run: Run) -> list[tuple[str, Any]]:
    return [(m.role, m.parts) for m in Message.objects.filter(run=run).order_by("index")]


def weather_calls(client: Any) -> tuple[Any, Any]:
    """The weather conversation's two chat calls made with an `openai` client: the
    question, then the tool's result; returns both answers."""
    history: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": ASK},
    ]
    first = client.chat.completions.create(model="gpt-4o", messages=history)
    call = first.choices[0].message.tool_calls[0]
    history += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "rainy"},
    ]
    return first, client.chat.completions.create(model="gpt-4o", messages=history)


def _usages(run: Run) -> list[tuple[int | None, ...]]:
    rows = Message.objects.filter(run=run, usage_input__isnull=False).order_by("index")
    return [(m.usage_input, m.usage_cache_read, m.usage_output) for m in rows]


def _expected_usages() -> list[tuple[int, int, int]]:
    return [(total - read, read, out) for total, out, read in USAGE]


def test_spans_exported_by_the_sdk_become_a_private_live_run_with_messages_and_usage(
    live_server, alice, key
):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_exporter(_url(live_server), key)))
    tracer = provider.get_tracer("tests.otlp")
    with tracer.start_as_current_span("invoke_agent weather"):
        for attributes in (FIRST, SECOND):
            with tracer.start_as_current_span("chat gpt-4o", attributes=attributes):
                pass
    provider.shutdown()

    run = _run()
    assert (run.owner, run.visibility, run.title) == (alice, Visibility.PRIVATE, ASK)
    assert run.last_append is not None  # live: its dashboard follows it
    assert [role for role, _ in _messages(run)] == WEATHER_ROLES
    assert _messages(run)[0][1][0]["text"] == SYSTEM
    assert _messages(run)[3][1][0]["text"] == RESULT["response"]
    assert _messages(run)[4][1][0]["text"] == ANSWER
    assert _usages(run) == _expected_usages()
    assert ReceivedSpan.objects.count() == 2  # model calls only: the agent span is not kept


def test_the_same_export_sent_twice_adds_nothing(live_server, key):
    spans = _recorded(FIRST, SECOND)
    exporter = _exporter(_url(live_server), key)
    _export(exporter, spans)
    run = _run()
    _export(exporter, spans)
    again = _run()
    assert ReceivedSpan.objects.count() == 2
    assert (again.pk, again.revision, again.message_count) == (run.pk, run.revision, 5)


def test_a_conversation_grows_as_its_calls_arrive_and_keeps_its_revision_history(live_server, key):
    first, second = (s for s in _recorded(FIRST, SECOND) if s.name.startswith("chat"))
    exporter = _exporter(_url(live_server), key)
    _export(exporter, [first])
    run = _run()
    assert [role for role, _ in _messages(run)] == ["system", "user", "assistant"]
    _export(exporter, [second])
    grown = _run()
    assert grown.pk == run.pk and grown.revision > run.revision
    assert grown.message_count == 5 and _usages(grown) == _expected_usages()


def test_calls_that_arrive_out_of_order_are_placed_by_their_start_time(live_server, key):
    first, second = (s for s in _recorded(FIRST, SECOND) if s.name.startswith("chat"))
    exporter = _exporter(_url(live_server), key)
    _export(exporter, [second])
    _export(exporter, [first])
    run = _run()
    assert [role for role, _ in _messages(run)] == WEATHER_ROLES
    # The first call's usage came last: the message it belongs to was stored without it.
    assert _usages(run) == _expected_usages()
    times = list(
        Message.objects.filter(run=run).order_by("index").values_list("timestamp", flat=True)
    )
    assert times[2] is not None and times[2].timestamp() == pytest.approx(
        first.end_time / 1e9, abs=1e-6
    )


@pytest.mark.parametrize(
    ("kind", "compressed", "prefixed"),
    [
        ("json", False, False),
        ("json", True, True),
        ("protobuf", True, False),
        ("protobuf", False, True),
    ],
)
def test_json_and_protobuf_exporters_gzip_or_not_deliver_the_same_run(
    live_server, key, kind, compressed, prefixed
):
    spans = _recorded(FIRST, SECOND)
    _export(_exporter(_url(live_server, prefixed), key, kind, compressed), spans)
    run = _run()
    assert [role for role, _ in _messages(run)] == WEATHER_ROLES
    assert _usages(run) == _expected_usages()
    # Ids as OTLP JSON writes them (hex), however they were sent.
    calls = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans[:2]}
    assert set(ReceivedSpan.objects.values_list("trace_id", "span_id")) == calls


# Answers the specification asks for, seen on the wire.


def _body(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def _span(span_id: str, attributes: dict[str, Any], start: int = 1) -> dict[str, Any]:
    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, int):
            return {"intValue": str(v)}
        return {"stringValue": v}

    return {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": span_id,
        "name": "chat",
        "startTimeUnixNano": str(1_760_000_000_000_000_000 + start),
        "endTimeUnixNano": str(1_760_000_000_000_000_000 + start + 1_000),
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
    }


def _post(
    url: str, body: bytes, content_type: str, key: str | None, **headers: str
) -> requests.Response:
    sent = {"Content-Type": content_type, **headers}
    if key:
        sent["Authorization"] = f"Bearer {key}"
    return requests.post(url, data=body, headers=sent, timeout=10)


def _status(response: requests.Response) -> status_pb2.Status:
    if response.headers["Content-Type"].startswith("application/x-protobuf"):
        return status_pb2.Status.FromString(response.content)
    return json_format.Parse(response.content, status_pb2.Status())


BAD = _span(
    "bbbbbbbbbbbbbbbb",
    {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps([_text("robot", "beep")]),
    },
)
GOOD = _span("aaaaaaaaaaaaaaaa", FIRST)


def test_a_bad_model_call_span_is_rejected_by_name_in_partial_success_and_the_others_kept(
    live_server, key
):
    response = _post(
        _url(live_server), json.dumps(_body(BAD, GOOD)).encode(), "application/json", key
    )
    assert response.status_code == 200 and response.headers["Content-Type"] == "application/json"
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert partial["errorMessage"].startswith("span bbbbbbbbbbbbbbbb: ")
    assert "attributes['gen_ai.input.messages'][0].role" in partial["errorMessage"]
    assert "'robot'" in partial["errorMessage"]
    assert [span.span_id for span in ReceivedSpan.objects.all()] == ["aaaaaaaaaaaaaaaa"]
    assert _run().message_count == 3


def test_a_protobuf_request_is_answered_in_protobuf_with_partial_success(live_server, key):
    request = json_format.ParseDict(_body(BAD, GOOD), trace_service_pb2.ExportTraceServiceRequest())
    # ParseDict reads ids as base64, as the proto3 JSON mapping says; the ids sent are bytes.
    for span, hex_id in zip(
        request.resource_spans[0].scope_spans[0].spans, ("bb" * 8, "aa" * 8), strict=True
    ):
        span.span_id = bytes.fromhex(hex_id)
        span.trace_id = bytes.fromhex("5b8efff798038103d269b633813fc60c")
    response = _post(_url(live_server), request.SerializeToString(), "application/x-protobuf", key)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/x-protobuf"
    answer = trace_service_pb2.ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 1
    assert answer.partial_success.error_message.startswith("span bbbbbbbbbbbbbbbb: ")


def test_a_batch_of_spans_that_are_not_model_calls_is_accepted_whole_and_makes_no_run(
    live_server, key
):
    http = _span("cccccccccccccccc", {"http.request.method": "POST"})
    response = _post(_url(live_server), json.dumps(_body(http)).encode(), "application/json", key)
    assert response.status_code == 200 and response.json() == {}
    assert not Run.objects.exists() and not ReceivedSpan.objects.exists()


@pytest.mark.parametrize(
    ("body", "content_type", "encoding", "said"),
    [
        (
            b"\xff\xfe not protobuf",
            "application/x-protobuf",
            "",
            "not an OTLP ExportTraceServiceRequest",
        ),
        (b"{not json", "application/json", "", "invalid JSON"),
        (
            b'{"resourceSpans": 3}',
            "application/json",
            "",
            "$.resourceSpans: expected a list, found int",
        ),
        (b"plain bytes", "application/json", "gzip", "not gzip"),
        (
            gzip.compress(b'{"resourceSpans": [')[:-8],
            "application/json",
            "gzip",
            "gzip stream cut short",
        ),
    ],
)
def test_an_undecodable_body_is_a_400_saying_what_was_wrong(
    live_server, key, body, content_type, encoding, said
):
    headers = {"Content-Encoding": encoding} if encoding else {}
    response = _post(_url(live_server), body, content_type, key, **headers)
    assert response.status_code == 400
    assert response.headers["Content-Type"] == content_type
    status = _status(response)
    assert status.code == 3 and said in status.message
    assert not ReceivedSpan.objects.exists()


def test_another_content_type_or_encoding_is_a_415(live_server, key):
    text = _post(_url(live_server), b"spans", "text/plain", key)
    brotli = _post(_url(live_server), b"{}", "application/json", key, **{"Content-Encoding": "br"})
    assert (text.status_code, brotli.status_code) == (415, 415)
    assert "'text/plain'" in _status(text).message and "'br'" in _status(brotli).message


def test_without_a_valid_key_the_answer_is_401_and_nothing_is_stored(live_server, key):
    body = json.dumps(_body(GOOD)).encode()
    missing = _post(_url(live_server), body, "application/json", None)
    wrong = _post(_url(live_server), body, "application/json", key + "x")
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert missing.headers["WWW-Authenticate"] == "Bearer"
    assert _status(missing).code == 16 and "Authorization: Bearer" in _status(missing).message
    assert not ReceivedSpan.objects.exists() and not Run.objects.exists()


def test_only_post_is_taken(live_server):
    assert requests.get(_url(live_server), timeout=10).status_code == 405


@pytest.fixture
def local_mode(settings) -> None:
    """As `serve` on 127.0.0.1 sets it: implied, for plainly local callers."""
    settings.LOCAL_USER, settings.LOCAL_USER_EXPLICIT = "local", False


def test_in_local_mode_an_exporter_needs_no_key_and_leaves_no_login_session(
    live_server, local_mode
):
    _export(_exporter(_url(live_server), None), _recorded(FIRST, SECOND))
    run = _run()
    assert run.owner.username == "local" and run.message_count == 5
    assert not Session.objects.exists()


def test_in_local_mode_a_wrong_key_is_still_refused(live_server, local_mode, key):
    response = _post(
        _url(live_server), json.dumps(_body(GOOD)).encode(), "application/json", "nope"
    )
    assert response.status_code == 401 and not Run.objects.exists()


# Other shapes of the same calls: OpenInference, span events, conversations.


def _openinference(
    messages: list[dict[str, Any]], reply: dict[str, Any], usage: tuple[int, int, int], session: str
) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "session.id": session,
        "llm.token_count.prompt": usage[0],
        "llm.token_count.completion": usage[1],
        "llm.token_count.prompt_details.cache_read": usage[2],
    }
    for prefix, listed in (("llm.input_messages", messages), ("llm.output_messages", [reply])):
        for i, message in enumerate(listed):
            for field, v in message.items():
                attributes[f"{prefix}.{i}.message.{field}"] = v
    return attributes


def test_openinference_spans_of_one_session_make_one_run_across_traces(live_server, key):
    ask = {"role": "user", "content": ASK}
    again = {"role": "user", "content": "And tomorrow?"}
    first = _openinference([ask], {"role": "assistant", "content": "Rainy."}, (40, 2, 0), "s-1")
    second = _openinference(
        [ask, {"role": "assistant", "content": "Rainy."}, again],
        {"role": "assistant", "content": "Sunny."},
        (60, 2, 32),
        "s-1",
    )
    exporter = _exporter(_url(live_server), key)
    _export(exporter, _recorded(first))  # two agent runs, two traces, one session
    _export(exporter, _recorded(second))
    run = _run()
    assert run.session_id == "s-1" and run.model == "gpt-4o-mini"
    texts = [parts[0]["text"] for _, parts in _messages(run)]
    assert texts == [ASK, "Rainy.", "And tomorrow?", "Sunny."]
    assert _usages(run) == [(40, 0, 2), (28, 32, 2)]


def test_messages_recorded_as_span_events_make_the_run(live_server, key):
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("azure.ai.inference").start_as_current_span("chat gpt-4o") as span:
        span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 25})
        for role, content in (("system", SYSTEM), ("user", ASK)):
            body = json.dumps({"role": role, "content": content})
            span.add_event(f"gen_ai.{role}.message", {"gen_ai.event.content": body})
        choice = {"message": {"content": ANSWER}, "finish_reason": "stop", "index": 0}
        span.add_event("gen_ai.choice", {"gen_ai.event.content": json.dumps(choice)})
    provider.shutdown()
    _export(_exporter(_url(live_server), key), memory.get_finished_spans())
    run = _run()
    assert [(role, parts[0]["text"]) for role, parts in _messages(run)] == [
        ("system", SYSTEM),
        ("user", ASK),
        ("assistant", ANSWER),
    ]
    assert _usages(run) == [(25, 0, 0)]


def test_spans_of_one_conversation_id_join_one_run_and_other_conversations_their_own(
    live_server, key
):
    one = {**FIRST, "gen_ai.conversation.id": "conv-1"}
    two = {**SECOND, "gen_ai.conversation.id": "conv-1"}
    other = {**FIRST, "gen_ai.conversation.id": "conv-2"}
    exporter = _exporter(_url(live_server), key)
    _export(exporter, _recorded(one) + _recorded(other))
    _export(exporter, _recorded(two))
    runs = {r.session_id: r for r in Run.objects.filter(format="otel")}
    assert sorted(runs) == ["conv-1", "conv-2"]
    assert (runs["conv-1"].message_count, runs["conv-2"].message_count) == (5, 3)


# An instrumented client nobody here wrote, against the fake upstream.


def test_the_openai_v2_instrumentation_around_the_openai_sdk_makes_the_run(
    live_server, key, upstream_url, monkeypatch
):
    from openai import OpenAI
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    from tests.upstream import Reply

    upstream, url = upstream_url
    upstream.script(Reply(calls=[("get_weather", {"city": "Paris"})]), ANSWER)
    # Messages go on the span only with the latest conventions and span capture
    # (opentelemetry-instrumentation-openai-v2's README: without them, content is opt-in
    # and goes to log records).
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_exporter(_url(live_server), key)))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = OpenAI(base_url=f"{url}/v1", api_key="sk-test")
        # One agent, one trace: the calls of a trace are one run.
        agent = provider.get_tracer("tests.agent").start_as_current_span("invoke_agent weather")
        agent.__enter__()
        first, second = weather_calls(client)
        agent.__exit__(None, None, None)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()

    run = _run()
    assert [role for role, _ in _messages(run)] == WEATHER_ROLES
    assert _messages(run)[2][1][0]["name"] == "get_weather"
    assert _messages(run)[4][1][0]["text"] == second.choices[0].message.content == ANSWER
    # The instrumentation records a chat call's prompt and completion tokens, not its
    # cached ones (patch.py, chat path: input_tokens and output_tokens only).
    measured = [(r.usage.prompt_tokens, r.usage.completion_tokens) for r in (first, second)]
    assert [(i + c, o) for i, c, o in _usages(run)] == measured


def test_calls_that_name_no_conversation_join_their_agents_whichever_arrives_first(
    live_server, key
):
    """The agent's span names the conversation, its chat spans not; the agent's span
    ends last, so exported span by span it arrives after its calls: they are moved
    from their trace's run to the conversation's. A second trace of the conversation
    continues the same run."""
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-42"}
    exporter = _exporter(_url(live_server), key)
    spans = _recorded(FIRST, **agent)
    assert spans[-1].name == "invoke_agent weather"  # the parent ends, and goes, last
    for one in spans:
        _export(exporter, [one])
    (run,) = Run.objects.filter(format="otel")
    assert run.session_id == "conv-42"
    assert [role for role, _ in _messages(run)] == ["system", "user", "assistant"]
    # The next turn, another trace: its agent span goes first this time.
    later = _recorded(SECOND, **agent)
    _export(exporter, [later[-1], *later[:-1]])
    (run,) = Run.objects.filter(format="otel")
    assert run.session_id == "conv-42"
    assert [role for role, _ in _messages(run)] == WEATHER_ROLES


def test_calls_moved_to_their_conversation_are_kept_when_the_export_that_names_it_adds_one(
    live_server, key
):
    """The agent's first call goes alone; its second call and the agent's span (which
    names the conversation) go together: the run has both calls."""
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-7"}
    exporter = _exporter(_url(live_server), key)
    first, second, parent = _recorded(FIRST, SECOND, **agent)
    _export(exporter, [first])
    _export(exporter, [second, parent])
    (run,) = Run.objects.filter(format="otel")
    assert run.session_id == "conv-7"
    assert [role for role, _ in _messages(run)] == WEATHER_ROLES
    assert _usages(run) == _expected_usages()
