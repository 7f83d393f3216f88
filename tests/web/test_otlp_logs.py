"""The OTLP/HTTP logs receiver: GenAI message events sent as log records join their
model call spans, whichever arrives first. Driven by clients nobody here wrote:
opentelemetry-instrumentation-openai-v2 in its default mode (messages as log records,
the span without them) around the real `openai` SDK against the fake upstream, the
SDK's logger provider and its protobuf and JSON log exporters."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from opentelemetry.exporter.otlp.json.http._log_exporter import (
    OTLPLogExporter as JSONLogExporter,
)
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.web.test_otlp_receiver import (
    ANSWER,
    ASK,
    SYSTEM,
    WEATHER_ROLES,
    _exporter,
    _messages,
    _run,
    _url,
    weather_calls,
)
from webapp.access.services.tokens import create_token
from webapp.models import ReceivedEvent, Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def key(alice) -> str:
    return create_token(alice, "otel")[1]


def _logs_url(live_server: Any) -> str:
    return f"{live_server.url}/v1/logs"


def _recorded(upstream_url: Any, monkeypatch: Any) -> tuple[list[Any], list[Any], Any, Any]:
    """Two chat calls of one agent made through the instrumented openai SDK: the spans
    and the log records it made, and the two answers."""
    from openai import OpenAI
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    from tests.upstream import Reply

    upstream, url = upstream_url
    upstream.script(Reply(calls=[("get_weather", {"city": "Paris"})]), ANSWER)
    # Content captured as events only: one log record per call
    # (gen_ai.client.inference.operation.details), the span without the messages.
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "event_only")
    spans, records = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(records))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        client = OpenAI(base_url=f"{url}/v1", api_key="sk-test")
        with tracer_provider.get_tracer("tests.agent").start_as_current_span("invoke_agent"):
            first, second = weather_calls(client)
    finally:
        instrumentor.uninstrument()
    found = list(spans.get_finished_spans()), list(records.get_finished_logs())
    tracer_provider.shutdown()
    logger_provider.shutdown()
    return found[0], found[1], first, second


@pytest.mark.parametrize("first_sent", ["spans", "logs"])
def test_message_events_sent_as_log_records_make_the_run_whichever_arrives_first(
    live_server, key, upstream_url, monkeypatch, first_sent
):
    spans, records, _, second = _recorded(upstream_url, monkeypatch)
    assert records  # the instrumentation put the messages on the logs signal
    assert not any("gen_ai.input.messages" in (s.attributes or {}) for s in spans)
    headers = {"Authorization": f"Bearer {key}"}
    send_spans = lambda: _exporter(_url(live_server), key).export(spans)  # noqa: E731
    send_logs = lambda: OTLPLogExporter(  # noqa: E731
        endpoint=_logs_url(live_server), headers=headers
    ).export(records)
    for send in (send_spans, send_logs) if first_sent == "spans" else (send_logs, send_spans):
        assert send().name == "SUCCESS"
    run = _run()
    assert [role for role, _ in _messages(run)] == WEATHER_ROLES
    messages = _messages(run)
    assert messages[0][1][0]["text"] == SYSTEM
    assert messages[1][1][0]["text"] == ASK
    assert messages[2][1][0]["name"] == "get_weather"
    assert messages[3][1][0]["text"] == "rainy"
    assert messages[4][1][0]["text"] == second.choices[0].message.content == ANSWER
    # Sent again (an exporter's retry): nothing new is kept, the run is unchanged.
    revision, events = run.revision, ReceivedEvent.objects.count()
    assert send_logs().name == "SUCCESS"
    assert ReceivedEvent.objects.count() == events
    assert Run.objects.get(pk=run.pk).revision == revision


def test_the_json_log_exporter_is_read_as_the_protobuf_one(
    live_server, key, upstream_url, monkeypatch
):
    spans, records, _, _ = _recorded(upstream_url, monkeypatch)
    headers = {"Authorization": f"Bearer {key}"}
    assert (
        JSONLogExporter(endpoint=_logs_url(live_server), headers=headers).export(records).name
        == "SUCCESS"
    )
    assert _exporter(_url(live_server), key, kind="json").export(spans).name == "SUCCESS"
    assert [role for role, _ in _messages(_run())] == WEATHER_ROLES


def _record(event: str, body: Any, span: str = "00000000000000a1") -> dict[str, Any]:
    record: dict[str, Any] = {"eventName": event, "timeUnixNano": "1760000000000000000"}
    if span:
        record |= {"traceId": "0" * 31 + "1", "spanId": span}
    if body is not None:
        record["body"] = {"kvlistValue": {"values": [{"key": "content", "value": body}]}}
    return record


def _post_logs(live_server: Any, key: str, records: list[Any], kind: str = "json") -> Any:
    body = {"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}
    return requests.post(
        _logs_url(live_server),
        data=json.dumps(body),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=10,
    )


def test_a_genai_record_without_its_span_is_rejected_by_name_and_other_records_skipped(
    live_server, key
):
    records = [
        _record("gen_ai.user.message", {"stringValue": "hi"}, span=""),
        _record("gen_ai.user.message", {"stringValue": "kept"}),
        {"body": {"stringValue": "an ordinary log line"}, "timeUnixNano": "1"},
    ]
    answer = _post_logs(live_server, key, records)
    assert answer.status_code == 200
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedLogRecords"] == "1"
    assert "logRecords[0].traceId" in partial["errorMessage"]
    assert ReceivedEvent.objects.count() == 1


def test_a_logs_body_that_is_not_an_export_is_a_400_and_a_protobuf_one_answered_in_kind(
    live_server, key
):
    bad = requests.post(
        _logs_url(live_server),
        data=b"\xff\x00not protobuf",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/x-protobuf"},
        timeout=10,
    )
    assert bad.status_code == 400
    request = logs_service_pb2.ExportLogsServiceRequest()
    ok = requests.post(
        f"{live_server.url}/otlp/v1/logs",
        data=request.SerializeToString(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/x-protobuf"},
        timeout=10,
    )
    assert ok.status_code == 200
    assert ok.headers["Content-Type"] == "application/x-protobuf"
    logs_service_pb2.ExportLogsServiceResponse.FromString(ok.content)


def test_without_a_valid_key_logs_are_refused_and_nothing_kept(live_server, key):
    answer = _post_logs(live_server, "wrong", [_record("gen_ai.user.message", None)])
    assert answer.status_code == 401
    assert ReceivedEvent.objects.count() == 0


def _post_spans(live_server: Any, key: str, spans: list[Any]) -> None:
    body = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    answer = requests.post(
        _url(live_server),
        data=json.dumps(body),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.content


@pytest.mark.parametrize("first_sent", ["spans", "logs"])
def test_one_log_record_per_message_as_the_conventions_before_1_37_had_them(
    live_server, key, first_sent
):
    """gen_ai.{system,user,tool}.message and gen_ai.choice records (semantic
    conventions v1.28 to v1.36; openai-v2 before its move to util-genai emitted these)
    give the chat span, which records none, its messages in their time order."""
    span = {
        "traceId": "0" * 31 + "1",
        "spanId": "00000000000000a1",
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1760000000000000000",
        "endTimeUnixNano": "1760000001000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "42"}},
        ],
    }
    choice = {
        "kvlistValue": {
            "values": [
                {"key": "index", "value": {"intValue": "0"}},
                {
                    "key": "message",
                    "value": {
                        "kvlistValue": {
                            "values": [{"key": "content", "value": {"stringValue": ANSWER}}]
                        }
                    },
                },
            ]
        }
    }
    records = [
        {**_record("gen_ai.user.message", {"stringValue": ASK}), "timeUnixNano": "2"},
        {**_record("gen_ai.system.message", {"stringValue": SYSTEM}), "timeUnixNano": "1"},
        {**_record("gen_ai.choice", None), "body": choice, "timeUnixNano": "3"},
    ]
    if first_sent == "spans":
        _post_spans(live_server, key, [span])
        assert _post_logs(live_server, key, records).status_code == 200
    else:
        assert _post_logs(live_server, key, records).status_code == 200
        _post_spans(live_server, key, [span])
    messages = _messages(_run())
    assert [(role, parts[0]["text"]) for role, parts in messages] == [
        ("system", SYSTEM),
        ("user", ASK),
        ("assistant", ANSWER),
    ]


def test_an_unreadable_event_is_rejected_by_name_and_the_others_kept(live_server, key):
    details = {
        "eventName": "gen_ai.client.inference.operation.details",
        "traceId": "0" * 31 + "1",
        "spanId": "00000000000000b2",
        "attributes": [
            {"key": "gen_ai.input.messages", "value": {"stringValue": '{"not": "a list"}'}}
        ],
    }
    answer = _post_logs(live_server, key, [details, _record("gen_ai.user.message", None)])
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedLogRecords"] == "1"
    assert "00000000000000b2" in partial["errorMessage"]
    assert "gen_ai.input.messages" in partial["errorMessage"]
    assert ReceivedEvent.objects.count() == 1
