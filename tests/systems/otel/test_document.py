"""A big OTLP JSON export read a span at a time gives the runs, warnings and errors
that loading it whole gives, and never holds its spans."""

from __future__ import annotations

import json
import tracemalloc
from io import BytesIO
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.ingest import base as formats_base
from contextsim.ingest.base import FormatError
from contextsim.ingest.detect import parse_stream
from contextsim.systems.otel import format as otel_document
from tests.ingest.test_pieces import _joined
from tests.systems.otel.test_format import ASK, CALL, RESULT, chat, export, span, text


@pytest.fixture(autouse=True)
def _every_document_big(monkeypatch):
    monkeypatch.setattr(formats_base, "LAZY_BYTES", -1)  # even one read whole at once


@st.composite
def exports(draw: st.DrawFn) -> dict[str, Any]:
    """Conversations of chat calls, each named on its calls, on an agent span (written
    anywhere, often after its calls, as spans are written when they end) or by nothing
    (one run per trace); starts that tie or go back; calls without recorded input; the
    spans in any order, over several resource and scope lists."""
    spans = []
    for c in range(draw(st.integers(1, 4))):
        trace = f"{c + 1:032x}"
        naming = draw(st.sampled_from(["call", "agent", "trace"]))
        # A conversation may be named as another's trace is: the warnings then say
        # which the first call written is grouped by.
        name = f"{draw(st.integers(1, 4)):032x}" if draw(st.booleans()) else f"conv {c}"
        agent_id = f"a{c:015x}"
        if naming == "agent":
            named = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": name}
            spans.append(span(agent_id, 0, named, trace=trace, parent=""))
        history = [text("user", f"task {c}")]
        for n in range(draw(st.integers(1, 5))):
            reply = CALL if n % 2 == 0 else text("assistant", f"answer {c}.{n}")
            own = {"gen_ai.conversation.id": name} if naming == "call" else {}
            start = draw(st.integers(0, 6))
            call = chat(f"{c:08x}{n:08x}", start, history, reply, (100 + n, 9), **own)
            call = {**call, "traceId": trace, "parentSpanId": agent_id}
            if draw(st.integers(0, 4)) == 0:  # content capture is opt-in
                call["attributes"] = [
                    a for a in call["attributes"] if a["key"] != "gen_ai.input.messages"
                ]
            spans.append(call)
            history = [*history, reply, RESULT]
    order = draw(st.permutations(range(len(spans))))
    spans = [spans[i] for i in order]
    cuts = sorted(draw(st.lists(st.integers(0, len(spans)), max_size=3)))
    pieces = [spans[a:b] for a, b in zip([0, *cuts], [*cuts, len(spans)], strict=True)]
    return {
        "resourceSpans": [
            {"resource": {}, "scopeSpans": [{"scope": {}, "spans": piece} for piece in pieces]}
        ]
    }


@settings(max_examples=150, deadline=None)
@given(exports())
def test_an_export_read_a_span_at_a_time_gives_the_runs_loading_it_whole_gives(data):
    raw = json.dumps(data, ensure_ascii=False).encode()
    whole = parse_stream("traces.json", BytesIO(raw))
    assert _joined("traces.json", raw) == (whole.format, whole.runs, whole.warnings)


def test_the_streamed_reading_is_the_one_taken(monkeypatch):
    taken = []
    real = otel_document._second_reading

    def watched(*args):  # type: ignore[no-untyped-def]
        taken.append(True)
        return real(*args)

    monkeypatch.setattr(otel_document, "_second_reading", watched)
    raw = json.dumps(export(chat("aa11aa11aa11aa11", 1, [ASK], CALL, (180, 18)))).encode()
    assert _joined("traces.json", raw)[0] == "otel" and taken == [True]


def _bad_attribute(attribute: dict[str, Any]) -> dict[str, Any]:
    call = chat("aa11aa11aa11aa11", 1, [ASK], CALL, (180, 18))
    call["attributes"].insert(1, attribute)
    return export(call)


@pytest.mark.parametrize(
    "data",
    [
        {"resourceSpans": [{"scopeSpans": [{"spans": 3}]}]},
        {"resourceSpans": 3},
        export({"spanId": "a"}),
        export(3),
        _bad_attribute({"value": {"stringValue": "chat"}}),
        _bad_attribute({"key": "k", "value": "chat"}),
        export(chat("aa11aa11aa11aa11", 1, [text("robot", "beep")], CALL, (1, 1))),
        export(chat("aa11aa11aa11aa11", 1, [ASK], CALL, (-5, 1))),
        export(span("b1c2d3e4f5a6b7c8", 2, {"gen_ai.operation.name": "execute_tool"})),
        # A good call, then a bad one: nothing is handed over before the error.
        export(
            chat("aa11aa11aa11aa11", 1, [ASK], CALL, (180, 18)),
            chat("bb22bb22bb22bb22", 2, [ASK], CALL, (1.5, 1)),
        ),
    ],
)
def test_a_bad_export_read_a_span_at_a_time_is_refused_as_loading_it_whole_refuses_it(data):
    raw = json.dumps(data).encode()
    with pytest.raises(FormatError) as whole:
        parse_stream("traces.json", BytesIO(raw))
    with pytest.raises(FormatError) as streamed:
        _joined("traces.json", raw)
    assert str(streamed.value) == str(whole.value)


def test_a_document_another_importer_claims_first_is_read_by_it():
    # Spans and a chat log's messages: the chat importers come first in detection.
    data = {**export(chat("aa11aa11aa11aa11", 1, [ASK], CALL, (180, 18))), "messages": [ASK]}
    raw = json.dumps(data).encode()
    whole = parse_stream("both.json", BytesIO(raw))
    assert _joined("both.json", raw) == (whole.format, whole.runs, whole.warnings)


def test_lone_surrogates_are_replaced_and_said_once():
    call = chat("aa11aa11aa11aa11", 1, [ASK], CALL, (180, 18))
    call["name"] = "chat \ud83d"  # written as the escape \ud83d, alone
    raw = json.dumps(export(call)).encode()
    _, _, warnings = _joined("s.json", raw)
    whole = parse_stream("s.json", BytesIO(raw))
    assert warnings == whole.warnings and len(warnings) == 1


def _long_export(conversations: int, calls: int) -> bytes:
    """Each call sends the whole conversation so far, as real exports do."""
    spans = []
    for c in range(conversations):
        history = [text("user", f"task {c} " * 40)]
        for n in range(calls):
            reply = text("assistant", f"answer {c}.{n} " * 40)
            call = chat(f"{c:08x}{n:08x}", c * calls + n, history, reply, (100, 9))
            spans.append({**call, "traceId": f"{c + 1:032x}"})
            history = [*history, reply, text("user", f"more {c}.{n} " * 40)]
    return json.dumps(export(*spans)).encode()


def _peak(read) -> int:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        read()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_export_read_a_span_at_a_time_holds_a_fraction_of_what_loading_it_holds(
    monkeypatch,
):
    raw = _long_export(6, 40)
    streamed = _peak(lambda: _joined("big.json", raw))
    monkeypatch.setattr(formats_base, "LAZY_BYTES", 1 << 40)
    whole = _peak(lambda: _joined("big.json", raw))
    # The conversations' messages are held either way; the spans, which each repeat
    # the conversation so far, only when loaded whole.
    assert streamed * 2 < whole, (streamed, whole)
    assert len(raw) > 2_000_000


def _call(span_id: str, start: int, sent: list[Any]) -> dict[str, Any]:
    return chat(span_id, start, sent, CALL, (180, 18))


@pytest.mark.parametrize(
    "raw",
    [
        # json.loads keeps the last of a repeated key: these spans are not the export's.
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [%s], "spans": []}]}]}',
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [%s]}]}], "resourceSpans": []}',
    ],
)
def test_a_repeated_key_on_the_way_to_the_spans_is_read_as_loading_whole_reads_it(raw):
    raw = raw % json.dumps(_call("aa11aa11aa11aa11", 1, [ASK])).encode()
    with pytest.raises(FormatError) as whole:
        parse_stream("traces.json", BytesIO(raw))
    with pytest.raises(FormatError) as streamed:
        _joined("traces.json", raw)
    assert str(streamed.value) == str(whole.value)
    assert "found none" in str(whole.value)


def test_the_first_fault_in_the_file_is_named_whatever_reading_finds_first():
    # The first span's messages are read only in the second reading; a later span's
    # start that is not a number is read in the first.
    first = _call("aa11aa11aa11aa11", 1, [text("robot", "beep")])
    later = {**_call("bb22bb22bb22bb22", 2, [ASK]), "startTimeUnixNano": "\u00b2"}
    raw = json.dumps(export(first, later)).encode()
    with pytest.raises(FormatError) as whole:
        parse_stream("traces.json", BytesIO(raw))
    with pytest.raises(FormatError) as streamed:
        _joined("traces.json", raw)
    assert "'robot'" in str(whole.value) and str(streamed.value) == str(whole.value)


def test_an_export_chosen_as_otel_with_nothing_recorded_is_refused_as_loading_whole_refuses():
    bare = span("aa11aa11aa11aa11", 1, {"gen_ai.operation.name": "chat"}, name="chat \ud83d")
    raw = json.dumps(export(bare)).encode()
    with pytest.raises(FormatError) as whole:
        parse_stream("t.json", BytesIO(raw), "otel")
    with pytest.raises(FormatError) as streamed:
        _joined("t.json", raw, "otel")
    assert "no messages were found" in str(whole.value)
    assert str(streamed.value) == str(whole.value)
