"""Codex CLI rollout JSONL: model calls, usage events, compactions, errors, and the
figures of a real rollout."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from contextsim.ingest.base import FormatError, ParsedFile, read_source
from contextsim.model import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    request_count,
    steps,
    user_turns,
)
from contextsim.systems.codex.format import CodexImporter

IMPORTER = CodexImporter()


def record(kind: str, payload: Any) -> dict[str, Any]:
    return {"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload}


def item(**payload: Any) -> dict[str, Any]:
    return record("response_item", payload)


def event(**payload: Any) -> dict[str, Any]:
    return record("event_msg", payload)


def message(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return item(type="message", role=role, content=[{"type": kind, "text": text}])


def call(call_id: str, name: str = "exec_command", arguments: str = "{}") -> dict[str, Any]:
    return item(type="function_call", name=name, arguments=arguments, call_id=call_id)


def output(call_id: str, value: Any = "ok") -> dict[str, Any]:
    return item(type="function_call_output", call_id=call_id, output=value)


def tokens(inp: int, cached: int = 0, out: int = 1, total: int = 0) -> dict[str, Any]:
    last = {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out}
    cumulative = {**last, "total_tokens": total or inp + out}
    return event(
        type="token_count", info={"total_token_usage": cumulative, "last_token_usage": last}
    )


META = record("session_meta", {"id": "sess-1", "timestamp": "2026-01-01T00:00:00Z"})
CONTEXT = record("turn_context", {"model": "gpt-test", "cwd": "/w"})


def raw(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def parse_bytes(data: bytes) -> ParsedFile:
    return IMPORTER.parse(read_source("r.jsonl", io.BytesIO(data)))


def parse(records: list[dict[str, Any]]) -> ParsedFile:
    return parse_bytes(raw(records))


def test_usage_is_normalized_so_cached_tokens_are_not_counted_twice():
    (run,) = parse(
        [
            META,
            CONTEXT,
            message("user", "hi"),
            message("assistant", "yo"),
            tokens(1000, cached=600, out=7),
        ]
    ).runs
    assert run.messages[-1].usage == Usage(400, cache_read=600, cache_write=0, output_tokens=7)
    assert run.messages[-1].usage.context == 1000
    assert (run.format, run.model, run.session_id) == ("codex", "gpt-test", "sess-1")


def test_parallel_function_calls_and_their_reasoning_are_one_model_call():
    (run,) = parse(
        [
            META,
            CONTEXT,
            message("user", "look"),
            item(
                type="reasoning",
                summary=[{"type": "summary_text", "text": "plan"}],
                content=None,
                encrypted_content="gAAAA",
            ),
            message("assistant", "checking"),
            call("c1"),
            call("c2"),
            call("c3"),
            tokens(100),
            output("c1"),
            output("c2"),
            output("c3"),
            message("assistant", "done"),
            tokens(200),
        ]
    ).runs
    assert [m.role for m in run.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "tool",
        "assistant",
    ]
    first = run.messages[1]
    assert first.parts[0] == ThinkingPart("plan", opaque_chars=len("gAAAA"), turn_only=True)
    assert first.parts[1] == TextPart("checking")
    assert [c.id for c in first.tool_calls] == ["c1", "c2", "c3"]
    assert first.source == "line 4"
    assert request_count(run) == 2
    assert [s.usage.input_tokens for s in steps(run) if s.usage] == [100, 200]


def test_token_count_repeated_before_the_next_call_is_counted_once():
    (run,) = parse(
        [
            META,
            CONTEXT,
            message("user", "go"),
            call("c1"),
            tokens(100),
            output("c1"),
            CONTEXT,
            tokens(100),
            message("assistant", "end"),
            tokens(150),
        ]
    ).runs
    assert [m.usage.input_tokens if m.usage else None for m in run.messages] == [
        None,
        100,
        None,
        150,
    ]
    assert (
        parse(
            [META, message("user", "go"), call("c1"), tokens(100), output("c1"), tokens(100)]
        ).warnings
        == ()
    )


def test_token_count_with_null_info_is_ignored():
    parsed = parse(
        [
            META,
            message("user", "go"),
            event(type="token_count", info=None),
            message("assistant", "hi"),
            tokens(50),
        ]
    )
    (run,) = parsed.runs
    assert [m.usage.input_tokens for m in run.messages if m.usage] == [50]
    assert parsed.warnings == ()


def test_usage_written_after_the_tool_outputs_still_measures_that_call():
    (run,) = parse([META, message("user", "go"), call("c1"), output("c1"), tokens(70)]).runs
    assert run.messages[1].usage is not None and run.messages[1].usage.input_tokens == 70


def test_usage_with_no_model_output_is_reported_not_invented():
    parsed = parse([META, message("user", "go"), tokens(70)])
    assert request_count(parsed.runs[0]) == 0
    assert any("1 usage event(s) follow no model output" in w for w in parsed.warnings)


def test_tool_output_without_a_call_is_kept_as_a_tool_message():
    (run,) = parse([META, message("user", "go"), output("ghost", "stray")]).runs
    assert run.messages[1].role == "tool"
    assert run.messages[1].parts == (ToolResultPart("ghost", "stray"),)


def test_tool_outputs_may_be_objects_and_custom_and_web_search_calls_are_calls():
    (run,) = parse(
        [
            META,
            message("user", "go"),
            item(type="custom_tool_call", call_id="p1", name="apply_patch", input="*** Begin"),
            item(
                type="web_search_call", status="completed", action={"type": "search", "query": "q"}
            ),
            tokens(10),
            item(
                type="custom_tool_call_output",
                call_id="p1",
                output={"content": "patch failed", "success": False},
            ),
            output(
                "x",
                [
                    {"type": "input_text", "text": "seen"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                ],
            ),
        ]
    ).runs
    patch, search = run.messages[1].tool_calls
    assert (patch.id, patch.name, patch.arguments) == ("p1", "apply_patch", "*** Begin")
    assert search.name == "web_search"
    assert json.loads(search.arguments) == {"type": "search", "query": "q"}
    assert run.messages[2].parts == (ToolResultPart("p1", "patch failed", is_error=True),)
    assert run.messages[3].parts == (ToolResultPart("x", "seen"),)


def test_developer_messages_and_injected_context_are_system_and_the_title_is_what_was_typed():
    long = "fix " * 40
    (run,) = parse(
        [
            META,
            message("developer", "rules"),
            message("user", "# AGENTS.md instructions"),
            message("user", "<environment_context>cwd</environment_context>"),
            message("user", long),
            event(type="user_message", message=long),
            message("assistant", "ok"),
            tokens(10),
        ]
    ).runs
    assert [m.role for m in run.messages] == ["system", "system", "system", "user", "assistant"]
    assert len(user_turns(run)) == 1
    assert run.title.startswith("fix fix") and len(run.title) == 80 and run.title.endswith("…")


def test_without_user_events_context_blocks_are_told_by_their_opening():
    (run,) = parse(
        [
            META,
            message("user", "<user_instructions>x"),
            message("user", "real"),
            message("assistant", "ok"),
        ]
    ).runs
    assert [m.role for m in run.messages] == ["system", "user", "assistant"]
    assert run.title == "real"


def test_compacted_record_adds_a_compaction_and_the_history_the_model_sees_next():
    history = [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "earlier ask"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            ],
        },
        {"type": "compaction", "encrypted_content": "opaque"},
    ]
    (run,) = parse(
        [
            META,
            message("user", "go"),
            call("c1"),
            tokens(900, cached=800),
            output("c1"),
            tokens(0, out=0, total=5000),  # the compaction's own bookkeeping event
            record("compacted", {"message": "", "replacement_history": history}),
            event(type="context_compacted"),
            message("assistant", "after"),
            tokens(120),
        ]
    ).runs
    (compaction,) = run.compactions
    assert (compaction.before_message, compaction.pre_tokens, compaction.trigger) == (
        3,
        900,
        "auto",
    )
    summary = run.messages[3]
    assert summary.role == "user" and summary.compact_summary and not summary.is_user_turn
    assert summary.parts == (TextPart("earlier ask"), ImagePart())
    assert [m.usage.context for m in run.messages if m.usage] == [900, 120]


def test_a_task_that_only_compacts_is_a_manual_compaction():
    (run,) = parse(
        [
            META,
            message("user", "go"),
            message("assistant", "hi"),
            tokens(40),
            event(type="task_started"),
            record("compacted", {"message": "summary text"}),
            event(type="context_compacted"),
            event(type="task_complete"),
        ]
    ).runs
    assert run.compactions[0].trigger == "manual"
    assert run.messages[-1].parts == (TextPart("summary text"),)


def test_unknown_record_and_item_types_are_skipped_with_counts():
    parsed = parse(
        [
            META,
            record("mystery", {}),
            record("mystery", {}),
            item(type="hologram"),
            message("user", "go"),
            event(type="exec_command_begin"),
        ]
    )
    assert [m.role for m in parsed.runs[0].messages] == ["user"]
    assert "r.jsonl: skipped 2 x record type 'mystery'" in parsed.warnings
    assert "r.jsonl: skipped 1 x response item 'hologram'" in parsed.warnings


def test_truncated_last_line_is_skipped_with_a_warning():
    data = raw([META, message("user", "go"), message("assistant", "hi")]) + b'{"type": "resp'
    parsed = parse_bytes(data)
    assert request_count(parsed.runs[0]) == 1
    assert parsed.warnings == ("r.jsonl: line 4: incomplete last line skipped",)


def test_empty_file_is_an_error_and_a_lone_session_line_is_an_empty_run():
    with pytest.raises(FormatError, match="empty"):
        read_source("r.jsonl", io.BytesIO(b""))
    (run,) = parse_bytes(raw([META])).runs
    assert run.messages == () and run.session_id == "sess-1"
    assert run.title == "Codex session sess-1"


def test_non_utf8_bytes_error_names_the_line():
    data = raw([META, message("user", "go")]) + b'{"type": "event_msg", "x": "\xff"}\n'
    with pytest.raises(FormatError, match=r"r\.jsonl: line 3: not valid UTF-8"):
        parse_bytes(data)


def test_payload_that_is_not_an_object_names_the_line():
    with pytest.raises(FormatError, match=r"line 2: expected 'payload' object, found list"):
        parse([META, record("response_item", [1, 2])])


def test_token_count_with_a_bad_number_names_the_line():
    bad = event(type="token_count", info={"last_token_usage": {"input_tokens": "many"}})
    with pytest.raises(FormatError, match=r"line 3: expected a whole number in 'input_tokens'"):
        parse([META, message("assistant", "x"), bad])


def test_old_rollouts_without_envelope_are_detected_and_read():
    data = raw(
        [
            {"id": "old-1", "timestamp": "2025-05-01T00:00:00Z", "instructions": None},
            {"record_type": "state"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ls"}]},
            {
                "type": "local_shell_call",
                "call_id": "s1",
                "status": "completed",
                "action": {"type": "exec", "command": ["ls"]},
            },
            {"type": "function_call_output", "call_id": "s1", "output": "a.txt"},
        ]
    )
    source = read_source("old.jsonl", io.BytesIO(data))
    assert IMPORTER.sniff(source)
    (run,) = IMPORTER.parse(source).runs
    assert run.session_id == "old-1" and run.title == "ls"
    assert run.messages[1].parts[0] == ToolCallPart(
        "s1", "local_shell", '{"type": "exec", "command": ["ls"]}'
    )


def test_sniff_claims_rollouts_but_not_native_or_claude_code_files():
    def sniff(records: list[dict[str, Any]]) -> bool:
        return IMPORTER.sniff(read_source("x.jsonl", io.BytesIO(raw(records))))

    assert sniff([META, CONTEXT])
    assert not sniff(
        [
            {"contextsim": 1, "type": "run", "title": "t"},
            {"type": "message", "role": "user", "content": "hi"},
        ]
    )
    assert not sniff(
        [
            {
                "type": "user",
                "sessionId": "s",
                "uuid": "u1",
                "message": {"role": "user", "content": "hi"},
            },
            {
                "type": "assistant",
                "sessionId": "s",
                "uuid": "u2",
                "message": {"role": "assistant", "content": []},
            },
        ]
    )


def test_real_rollout_figures(corpus: Path):
    (path,) = sorted((corpus / "codex").glob("localpush_redacted_rollout-*.jsonl"))
    with path.open("rb") as stream:
        source = read_source(str(path), stream)
        assert IMPORTER.sniff(source)
        parsed = IMPORTER.parse(source)
    (run,) = parsed.runs
    assert parsed.warnings == ()
    assert run.model == "gpt-5.3-codex"
    assert run.session_id == "019c8a59-e9dd-71f0-9ae3-4079fe9726a9"
    measured = [m.usage for m in run.messages if m.usage is not None]
    # 286 model calls, each followed by its own usage event: every request is measured.
    assert request_count(run) == 286
    assert len(measured) == 286
    assert max(u.context for u in measured) == 209_950
    assert measured[0] == Usage(17_088 - 3_456, cache_read=3_456, output_tokens=350)
    calls = [c for m in run.messages for c in m.tool_calls]
    # 316 function calls + 49 custom tool calls answered by 365 outputs, plus 7 web searches.
    assert len(calls) == 372
    assert sum(c.name != "web_search" for c in calls) == 365
    assert sum(len(m.tool_results) for m in run.messages) == 365
    assert len(user_turns(run)) == 38
    (compaction,) = run.compactions
    assert (compaction.pre_tokens, compaction.trigger) == (209_950, "auto")
    assert run.messages[compaction.before_message].compact_summary
    # session_meta.base_instructions (redacted upstream, 13,131 characters) is sent with
    # every request: the first system message.
    assert run.messages[0].role == "system"
    assert run.messages[0].text == "[REDACTED_TEXT len=13131 sha=036b7e47]"
    assert len(run.messages) == 743 + 1
    # task_started states the window.
    assert run.context_window == 258_400


def test_turn_context_instructions_are_the_developer_items_already_in_the_rollout(corpus: Path):
    """turn_context.developer_instructions is sent as a developer response_item (the same
    redaction hash in the file): it is counted once, as that item, not again."""
    (path,) = sorted((corpus / "codex").glob("localpush_redacted_rollout-*.jsonl"))
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    contexts = [r["payload"] for r in records if r["type"] == "turn_context"]
    developer = [
        c["text"]
        for r in records
        if r["type"] == "response_item" and r["payload"].get("role") == "developer"
        for c in r["payload"]["content"]
    ]
    said = {c["developer_instructions"].split("sha=")[1] for c in contexts}
    sent = {t.split("sha=")[1] for t in developer if "sha=" in t}
    assert said and said <= sent
    with path.open("rb") as stream:
        (run,) = IMPORTER.parse(read_source(str(path), stream)).runs
    texts = [m.text for m in run.messages if m.role == "system"]
    for sha in said:
        assert sum(sha in t for t in texts) == sum(sha in t for t in developer)


def test_a_rollout_whose_usage_comes_before_its_call_gives_each_call_its_own():
    # Codex 0.64/0.65 write a call's token_count before the call's items (and again
    # after its outputs); the first usage, before any model output, tells the order.
    (run,) = parse(
        [
            META,
            message("user", "go"),
            tokens(100),
            call("c1"),
            output("c1"),
            tokens(100),
            tokens(300),
            call("c2"),
            output("c2"),
            tokens(300),
            tokens(0, out=0),  # a compaction's bookkeeping
            record("compacted", {"message": "summary"}),
            tokens(50),
            message("assistant", "done"),
        ]
    ).runs
    calls = [m for m in run.messages if m.role == "assistant"]
    assert [m.usage.context for m in calls] == [100, 300, 50]
    # The compaction is placed after the call it measured, with that call's size.
    assert run.compactions[0].pre_tokens == 300
    assert run.messages[run.compactions[0].before_message - 1].role == "tool"


def test_the_window_is_read_from_every_token_count():
    info = tokens(100)
    info["payload"]["info"]["model_context_window"] = 258_400
    (run,) = parse([META, message("user", "go"), message("assistant", "hi"), info]).runs
    assert run.context_window == 258_400


def test_redacted_encrypted_reasoning_keeps_the_length_its_marker_states():
    reasoning = item(
        type="reasoning",
        summary=[],
        content=None,
        encrypted_content="[REDACTED_ENCRYPTED_CONTENT len=1892 sha=f0869daf]",
    )
    (run,) = parse([META, message("user", "go"), reasoning, message("assistant", "x")]).runs
    assert run.messages[1].parts[0] == ThinkingPart("", opaque_chars=1_892)


def test_a_calls_reasoning_is_sized_as_measured_and_sent_only_within_its_turn():
    reasoning = item(type="reasoning", summary=[], content=None, encrypted_content="g" * 4_000)
    usage = tokens(5_000, out=900)
    usage["payload"]["info"]["last_token_usage"]["reasoning_output_tokens"] = 700
    (run,) = parse([META, message("user", "go"), reasoning, call("c1"), usage, output("c1")]).runs
    (thought,) = [p for p in run.messages[1].parts if isinstance(p, ThinkingPart)]
    assert thought == ThinkingPart("", opaque_chars=4_000, sent_tokens=700, turn_only=True)
