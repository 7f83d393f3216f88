"""The native format: both shapes, round trips, and errors that name the place."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest

from contextsim.ingest.base import FormatError
from contextsim.ingest.detect import parse_stream
from contextsim.model import TextPart, ToolCallPart, ToolResultPart, steps
from contextsim.systems.native.format import run_to_dict


def parse(text: str, fmt: str | None = None):
    return parse_stream("t.json", io.BytesIO(text.encode()), fmt)


DOC = {
    "contextsim": 1,
    "runs": [
        {
            "title": "demo",
            "model": "m",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_call", "id": "c1", "name": "ls", "arguments": {"p": "."}}
                    ],
                    "usage": {"input_tokens": 10, "cache_read": 5, "output_tokens": 3},
                },
                {
                    "role": "tool",
                    "content": [{"type": "tool_result", "call_id": "c1", "text": "a"}],
                },
            ],
        }
    ],
}


def test_document_is_detected_and_parsed_with_usage_and_pending_step():
    parsed = parse(json.dumps(DOC))
    assert parsed.format == "native"
    (run,) = parsed.runs
    assert run.title == "demo"
    assert run.messages[2].parts == (ToolCallPart("c1", "ls", '{"p": "."}'),)
    assert run.messages[2].usage is not None and run.messages[2].usage.context == 15
    assert [s.end for s in steps(run)] == [2, 4]
    assert steps(run)[1].response is None


def test_jsonl_with_two_runs_round_trips_through_run_to_dict():
    original = parse(json.dumps(DOC)).runs[0]
    lines = []
    for title in ("a", "b"):
        d = run_to_dict(replace(original, title=title))
        header = {k: v for k, v in d.items() if k not in ("messages", "compactions")}
        lines.append(json.dumps({"contextsim": 1, "type": "run", **header}))
        lines += [json.dumps({"type": "message", **m}) for m in d["messages"]]
    runs = parse("\n".join(lines) + "\n").runs
    assert [r.title for r in runs] == ["a", "b"]
    assert [(m.role, m.parts, m.usage) for m in runs[1].messages] == [
        (m.role, m.parts, m.usage) for m in original.messages
    ]
    assert runs[1].messages[0].source == "line 7"


def test_unknown_part_type_names_the_json_path():
    bad = json.loads(json.dumps(DOC))
    bad["runs"][0]["messages"][1]["content"] = [{"type": "video"}]
    with pytest.raises(FormatError) as err:
        parse(json.dumps(bad))
    assert "$.runs[0].messages[1].content[0].type" in str(err.value)
    assert "unknown part type 'video'" in str(err.value)


def test_jsonl_message_before_header_names_the_line():
    with pytest.raises(FormatError, match=r"line 1: expected a run header"):
        parse(
            '{"type": "message", "role": "user", "content": "x"}\n{"type": "message"}\n', "native"
        )


def test_negative_usage_is_rejected():
    bad = json.loads(json.dumps(DOC))
    bad["runs"][0]["messages"][2]["usage"]["input_tokens"] = -1
    with pytest.raises(
        FormatError,
        match=r"usage.input_tokens: expected a number of tokens from 0 to 999,999,999,999",
    ):
        parse(json.dumps(bad))


def test_tool_result_text_parts_stay_in_order():
    (run,) = parse(json.dumps(DOC)).runs
    assert run.messages[3].parts == (ToolResultPart("c1", "a"),)
    assert run.messages[1].parts == (TextPart("hi"),)


def lines(*records: dict, end: str = "\n") -> bytes:
    return ("\n".join(json.dumps(r) for r in records) + end).encode()


HEADER = {"contextsim": 1, "type": "run", "title": "t"}


def call(i: str) -> dict:
    return {"type": "tool_call", "id": i, "name": "read", "arguments": "{}"}


def test_empty_file_is_an_error_naming_the_file():
    with pytest.raises(FormatError, match=r"^t.json: the file is empty"):
        parse_stream("t.json", io.BytesIO(b"  \n"))


def test_truncated_last_line_is_skipped_with_a_warning():
    data = lines(HEADER, {"type": "message", "role": "user", "content": "hi"}, end="\n")
    data += b'{"type": "message", "role": "assis'
    parsed = parse_stream("live.jsonl", io.BytesIO(data))
    assert len(parsed.runs[0].messages) == 1
    assert parsed.warnings == ("live.jsonl: line 3: incomplete last line skipped",)


def test_non_utf8_bytes_name_the_line_and_byte():
    data = lines(HEADER) + b'{"type": "message", "role": "user", "content": "caf\xe9"}\n'
    with pytest.raises(FormatError, match=r"line 2: not valid UTF-8 \(byte 0xe9 at column 52\)"):
        parse_stream("x.jsonl", io.BytesIO(data))


def test_parallel_calls_images_and_orphan_results_are_kept():
    data = lines(
        HEADER,
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "image", "media_type": "image/png"}],
        },
        {"type": "message", "role": "assistant", "content": [call("a"), call("b")]},
        {
            "type": "message",
            "role": "tool",
            "content": [
                {"type": "tool_result", "call_id": "a", "text": "1"},
                {"type": "tool_result", "call_id": "b", "text": "2", "is_error": True},
                {"type": "tool_result", "call_id": "zzz", "text": "orphan"},
            ],
        },
    )
    (run,) = parse_stream("p.jsonl", io.BytesIO(data)).runs
    assert run.messages[0].parts[0].type == "image"
    assert [c.id for c in run.messages[1].tool_calls] == ["a", "b"]
    assert [r.call_id for r in run.messages[2].tool_results] == ["a", "b", "zzz"]
    assert run.messages[2].tool_results[1].is_error


def test_unsupported_version_is_named():
    with pytest.raises(FormatError, match=r"unsupported contextsim version 2; expected 1"):
        parse(json.dumps({**DOC, "contextsim": 2}))


def test_byte_order_mark_is_ignored():
    (run,) = parse_stream("bom.json", io.BytesIO(b"\xef\xbb\xbf" + json.dumps(DOC).encode())).runs
    assert run.title == "demo"


def test_a_one_line_document_with_bad_utf8_names_the_line_and_column():
    data = b'{"contextsim": 1, "runs": [{"messages": [{"role": "user", "content": "caf\xe9"}]}]}'
    with pytest.raises(FormatError, match=r"line 1: not valid UTF-8 \(byte 0xe9 at column 74\)"):
        parse_stream("x.json", io.BytesIO(data))


def test_a_jsonl_file_with_bad_utf8_on_its_first_line_is_refused_at_once():
    data = b'{"type": "message", "content": "caf\xe9"}\n' + lines(HEADER) * 3
    with pytest.raises(FormatError, match=r"line 1: not valid UTF-8 \(byte 0xe9 at column 36\)"):
        parse_stream("x.jsonl", io.BytesIO(data))


def test_the_facts_reasoning_and_usage_carry_round_trip():
    # What the Codex, Gemini CLI and Claude Code importers now keep must survive the
    # web store (which stores parts and usage in this form).
    from contextsim.model import Message, TextPart, ThinkingPart, Usage
    from contextsim.systems.native.format import message_to_dict, parse_message

    message = Message(
        "assistant",
        (ThinkingPart("plan", opaque_chars=4_000, sent_tokens=700, turn_only=True), TextPart("x")),
        Usage(10, 20, 30, 40, cache_write_1h=25, model="claude-opus-4-6"),
    )
    back = parse_message("t", "m", message_to_dict(message))
    assert (back.parts, back.usage) == (message.parts, message.usage)


def test_a_run_sent_on_keeps_its_sources_facts_and_a_bad_one_is_named():
    from contextsim.model import Message as Said
    from contextsim.model import Run as Sent

    run = Sent(
        "t",
        (Said("user", (TextPart("hi"),)),),
        format="codex",
        context_window=272_000,
        harness_version="0.50.0",
        window_source="the log's model_context_window",
    )
    body = json.dumps({"contextsim": 1, "runs": [run_to_dict(run)]}).encode()
    (back,) = parse_stream("sent", io.BytesIO(body)).runs
    assert (back.format, back.context_window, back.harness_version, back.window_source) == (
        "codex",
        272_000,
        "0.50.0",
        "the log's model_context_window",
    )
    bad = json.loads(body)
    bad["runs"][0]["context_window"] = -5
    with pytest.raises(FormatError, match=r"\$\.runs\[0\]\.context_window: expected a positive"):
        parse_stream("sent", io.BytesIO(json.dumps(bad).encode()))
    bad["runs"][0].update(context_window=1, format="<b>")
    with pytest.raises(FormatError, match=r"\$\.runs\[0\]\.format: expected a format's name"):
        parse_stream("sent", io.BytesIO(json.dumps(bad).encode()))
