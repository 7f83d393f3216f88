"""The receiver follows a conversation a call at a time (webapp.ingest.otlp.services.receiving: each
call's messages read once, only the new tail written) and falls back to reading every
stored span when calls arrive out of order: either way the stored run is the one the
file importer makes of all the spans at once."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import count
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextsim.counting.estimators import content_key
from contextsim.systems.otel.spans import calls_of, runs_from
from webapp.ingest.otlp.services.receiving import receive_export
from webapp.models import Message, ReceivedSpan, Run

pytestmark = pytest.mark.django_db(transaction=True)
OWNERS = count()
BASE = 1_760_000_000_000_000_000


def _message(role: str, text: str, call: int | None = None) -> dict[str, Any]:
    if call is not None and role == "assistant":
        part = {"type": "tool_call", "id": f"c{call}", "name": "read", "arguments": {"n": call}}
    elif call is not None:
        part = {"type": "tool_call_response", "id": f"c{call}", "response": text}
    else:
        part = {"type": "text", "content": text}
    return {"role": role, "parts": [part]}


def _span(conversation: int, n: int, sent: list[Any], reply: Any, start: int) -> dict[str, Any]:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": f"conversation {conversation}",
        "gen_ai.input.messages": json.dumps(sent),
        "gen_ai.output.messages": json.dumps([reply]),
        "gen_ai.usage.input_tokens": 100 + 10 * n,
        "gen_ai.usage.output_tokens": 5 + n,
    }
    return {
        "traceId": f"{conversation + 1:032x}",
        "spanId": f"{conversation * 1000 + n + 1:016x}",
        "name": "chat gpt-4o",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 900_000),
        "attributes": [
            {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
            for k, v in attributes.items()
        ],
    }


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Spans of 1-3 conversations: each call sends the history so far (sometimes a
    retry that sends an earlier history again), tool rounds and text answers."""
    spans, clock = [], count(step=1_000_000)
    for c in range(draw(st.integers(1, 3))):
        history = [_message("user", draw(st.sampled_from(["hi", "read it", "count"])))]
        for n in range(draw(st.integers(1, 6))):
            retry = len(history) > 2 and draw(st.booleans()) and draw(st.booleans())
            sent = history[: len(history) - 2] if retry else list(history)
            tool = draw(st.booleans())
            reply = _message("assistant", f"answer {n}", n if tool else None)
            spans.append(_span(c, n, sent, reply, BASE + next(clock)))
            if not retry:
                history += [reply, _message("tool", f"result {n}", n)] if tool else [reply]
                if not tool:
                    history.append(_message("user", f"more {n}"))
    return spans


def _export(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def _stored(run: Run) -> list[tuple[object, ...]]:
    rows = Message.objects.filter(run=run).order_by("index")
    return list(rows.values_list("content_hash", "usage_input", "usage_output", "timestamp"))


def _expected(spans: list[dict[str, Any]]) -> dict[str, list[tuple[object, ...]]]:
    """Per conversation, what the file importer's mapping makes of all the spans."""
    runs = runs_from("traces.json", calls_of(_export(spans)).calls, [])
    return {
        run.session_id: [
            (
                content_key(m),
                m.usage.input_tokens if m.usage else None,
                m.usage.output_tokens if m.usage else None,
                None if m.time is None else datetime.fromtimestamp(m.time, tz=UTC),
            )
            for m in run.messages
        ]
        for run in runs
    }


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans=conversations(), data=st.data())
def test_batches_in_any_order_store_what_the_importer_makes_of_all_spans(spans, data):
    owner = get_user_model().objects.create_user(f"otel {next(OWNERS)}")
    order = data.draw(st.sampled_from(["in order", "shuffled"]))
    sent = spans if order == "in order" else data.draw(st.permutations(spans))
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(sent) - 1)), max_size=4)))
    for first, end in zip([0, *cuts], [*cuts, len(sent)], strict=True):
        receive_export(owner, _export(sent[first:end]))
    expected = _expected(spans)
    runs = {r.session_id: r for r in Run.objects.filter(owner=owner, format="otel")}
    assert runs.keys() == expected.keys()
    for key, run in runs.items():
        assert _stored(run) == expected[key], key
        assert run.message_count == len(expected[key])


def _protobuf_export(spans: list[dict[str, Any]]) -> Any:
    """What the receiver reads of the spans sent as a protobuf body."""
    import base64

    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    from webapp.ingest.otlp import wire as wire

    def b64(hex_id: str) -> str:
        return base64.b64encode(bytes.fromhex(hex_id)).decode()

    sent = [{**s, "traceId": b64(s["traceId"]), "spanId": b64(s["spanId"])} for s in spans]
    request = json_format.ParseDict(_export(sent), trace_service_pb2.ExportTraceServiceRequest())
    return wire.export_of(request.SerializeToString(), wire.PROTOBUF, "", 10**8)


@pytest.mark.parametrize("body", ["protobuf", "json"])
def test_a_process_that_did_not_follow_a_conversation_reads_its_kept_spans_back(body):
    from webapp.ingest.otlp.services import follow as span_follow

    owner = get_user_model().objects.create_user(f"otel {next(OWNERS)}")
    history = [_message("user", "read it")]
    sent = []
    for n in range(4):
        reply = _message("assistant", f"answer {n}", n)
        sent.append(_span(0, n, list(history), reply, BASE + n * 1_000_000))
        history += [reply, _message("tool", f"result {n}", n)]
    first = _protobuf_export(sent[:3]) if body == "protobuf" else None
    if first is not None:
        receive_export(owner, first.data, first.serialized)
    else:
        receive_export(owner, _export(sent[:3]))
    kept = ReceivedSpan.objects.filter(owner=owner)
    assert set(kept.values_list("packed", flat=True)) == {body}
    # Another process (or this one restarted) knows nothing of the conversation.
    span_follow.FOLLOWED.clear()
    receive_export(owner, _export(sent[3:]))
    (run,) = Run.objects.filter(owner=owner, format="otel")
    assert _stored(run) == _expected(sent)["conversation 0"]
    assert run.message_count == 8  # the question, 4 answers, 3 results sent back
