"""Suite `otlp`: the OTLP/HTTP trace receiver's throughput into live runs, on SQLite.

Two workloads of 10,000 spans (WORKLOADS): conversations that run at once, several calls
each (GenAI chat spans of the current conventions, each with its whole history, as
instrumentations record it: a user turn, then tool call and result rounds, ~300
characters a message). The spans
are sent in start order, BATCH to a request (the SDK's BatchSpanProcessor exports at
most 512), as protobuf, to ``POST /v1/traces`` through Django (the test client, an API
key): every batch stores its spans and brings each conversation's live run in step.
One span of another conversation is sent first (what a running server has loaded
once, the tokenizers' tables above all, is not throughput).
A live run's messages are counted by the fast estimators as they arrive; the real
tokenizers count a run when someone first looks at it (webapp.store.actions.rows.
LIVE_COUNTED), which this throughput leaves out. The same spans, as one OTLP JSON file,
through the file importer (parse and save, every estimator counted: a small file is
counted whole before it is shown) are the reference.
The server's heap is settled once started, as its entry points do (webapp.runtime.heap).
Figures: spans per second sustained, the median of ROUNDS rounds (issue 13: >= 2,000),
and the receiver's time as a ratio to the importer's.
"""

from __future__ import annotations

import base64
import gc
import io
import json
import shutil
import statistics
import tempfile
import time
from typing import Any

from bench.report import Figure
from bench.suite_dashboard import _say, start_django

WORKLOADS = {"agents": (200, 50), "short chats": (2_000, 5)}
"""Name -> (conversations, calls each): 10,000 spans each, 20 export requests."""
BATCH = 500
ROUNDS = 3
"""Rounds of each workload (a new owner each): the median is reported, this machine's
speed varying by a fifth from one run to the next."""
BASE = 1_760_000_000_000_000_000
TEXT = "read the chapter, count the tokens, then call the next tool and write it down " * 4


def _message(role: str, i: str, call: bool = False) -> dict[str, Any]:
    """A message of call `i` ("round.conversation.call": every text its own, as a real
    conversation's are, so no count is reused from another's or an earlier round's)."""
    if call:
        part = {"type": "tool_call", "id": f"c{i}", "name": "read", "arguments": {"n": i}}
        return {"role": role, "parts": [part]}
    if role == "tool":
        part = {"type": "tool_call_response", "id": f"c{i}", "response": f"{i}: {TEXT}"}
        return {"role": role, "parts": [part]}
    return {"role": role, "parts": [{"type": "text", "content": f"{i}: {TEXT}"}]}


def _attribute(key: str, value: Any) -> dict[str, Any]:
    kind = {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}
    return {"key": key, "value": kind}


def _spans(conversations: int, calls: int, round_: int = 0) -> list[dict[str, Any]]:
    """Every call span of every conversation, in start order, ids in hex; the texts
    those of round `round_`."""
    spans = []
    for c in range(conversations):
        history = [_message("user", f"{round_}.{c}.0")]
        for n in range(calls):
            last = n == calls - 1
            label = f"{round_}.{c}.{n}"
            reply = _message("assistant", label, call=not last)
            start = BASE + (n * conversations + c) * 1_000_000
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": json.dumps(history),
                "gen_ai.output.messages": json.dumps([reply]),
                "gen_ai.usage.input_tokens": 200 + 150 * n,
                "gen_ai.usage.output_tokens": 20,
            }
            spans.append(
                {
                    "traceId": f"{c + 1:032x}",
                    "spanId": f"{c * calls + n + 1:016x}",
                    "name": "chat gpt-4o",
                    "startTimeUnixNano": str(start),
                    "endTimeUnixNano": str(start + 900_000),
                    "attributes": [_attribute(k, v) for k, v in attributes.items()],
                }
            )
            history += [reply, _message("tool", label)]
    return sorted(spans, key=lambda s: int(s["startTimeUnixNano"]))


def _export(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def _protobuf(spans: list[dict[str, Any]]) -> bytes:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    def b64(hex_id: str) -> str:
        return base64.b64encode(bytes.fromhex(hex_id)).decode()

    wire = [{**s, "traceId": b64(s["traceId"]), "spanId": b64(s["spanId"])} for s in spans]
    request = json_format.ParseDict(_export(wire), trace_service_pb2.ExportTraceServiceRequest())
    body: bytes = request.SerializeToString()
    return body


def _receive(name: str, bodies: list[bytes], spans: int, conversations: int, calls: int) -> float:
    """Seconds to send every body (an export request of BATCH spans) to the receiver;
    `spans` in all."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from webapp.access.services.tokens import create_token
    from webapp.models import ReceivedSpan, Run

    owner, _ = get_user_model().objects.get_or_create(username=f"bench-otlp {name}")
    key = create_token(owner, "bench")[1]
    client = Client(SERVER_NAME="localhost")
    _warm_up(client, key)
    started = time.perf_counter()
    for body in bodies:
        response = client.post(
            "/v1/traces",
            body,
            content_type="application/x-protobuf",
            headers={"Authorization": f"Bearer {key}"},
        )
        assert response.status_code == 200, response.content
        assert response.content == b"", response.content  # nothing rejected
    seconds = time.perf_counter() - started
    assert ReceivedSpan.objects.filter(owner=owner).count() == spans + 1
    runs = Run.objects.filter(owner=owner, format="otel").exclude(session_id="f" * 32)
    assert runs.count() == conversations
    assert {r.message_count for r in runs} == {2 * calls}  # user, (call, result) rounds, answer
    return seconds


def _warm_up(client: Any, key: str) -> None:
    """One span of another conversation first, so that what a running server loads
    once (the tokenizers' tables, the protobuf classes) is not counted as throughput."""
    (span,) = _spans(1, 1, round_=-1)
    span = {**span, "traceId": "f" * 32}
    response = client.post(
        "/v1/traces",
        _protobuf([span]),
        content_type="application/x-protobuf",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 200, response.content


def _import(name: str, raw: bytes, conversations: int) -> float:
    """Seconds to parse and save the same spans as one OTLP JSON file (`raw`)."""
    from django.contrib.auth import get_user_model

    from contextsim.ingest.detect import parse_stream
    from webapp.models import Visibility
    from webapp.store.actions.saving import do_save_runs

    owner, _ = get_user_model().objects.get_or_create(username=f"bench-file {name}")
    started = time.perf_counter()
    parsed = parse_stream("traces.json", io.BytesIO(raw))
    saved = do_save_runs(parsed, owner=owner, visibility=Visibility.PRIVATE)
    seconds = time.perf_counter() - started
    assert len(list(saved)) == conversations
    return seconds


def _round(name: str, n: int, conversations: int, calls: int) -> float:
    """Seconds to receive round `n`'s spans (texts of their own: nothing counted in an
    earlier round is counted again)."""
    spans = _spans(conversations, calls, n)
    count = len(spans)
    bodies = [_protobuf(spans[i : i + BATCH]) for i in range(0, count, BATCH)]
    # The exporter is another process: its spans are not left in the receiver's heap
    # (whose size every full garbage collection walks).
    del spans
    gc.collect()
    return _receive(f"{name} {n}", bodies, count, conversations, calls)


def run() -> list[Figure]:
    data_dir = tempfile.mkdtemp(prefix="contextsim-bench-otlp-")
    figures = []
    try:
        start_django(data_dir)
        from webapp.runtime import heap

        heap.settle()  # as the server's entry points do once started
        for name, (conversations, calls) in WORKLOADS.items():
            count = conversations * calls
            rounds = [_round(name, n, conversations, calls) for n in range(ROUNDS)]
            received = statistics.median(rounds)
            raw = json.dumps(_export(_spans(conversations, calls, ROUNDS))).encode()
            imported = _import(name, raw, conversations)
            shown = ", ".join(f"{r:.2f}" for r in rounds)
            _say(f"{name}: receiver {shown} s, file importer {imported:.2f} s")
            label = f"{name} ({conversations} x {calls} calls)"
            figures += [
                Figure(
                    f"{label}: spans received per second",
                    count / received,
                    "/s",
                    (">=", 2_000),
                ),
                Figure(f"{label}: receiver, batches of {BATCH} (median round)", received, "s"),
                Figure(f"{label}: file importer, the same spans", imported, "s"),
                Figure(f"{label}: receiver / file importer", received / imported, "x"),
            ]
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return figures
