"""Claude Code session JSONL: responses split over lines, subagents, compactions, errors,
and the figures of real sessions."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from contextsim.ingest.base import FormatError, ParsedFile, read_source
from contextsim.ingest.detect import parse_path, parse_stream
from contextsim.model import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    request_count,
    steps,
)
from contextsim.registry import POLICIES
from contextsim.systems.claude_code.format import ClaudeCodeImporter
from contextsim.systems.native.format import message_to_dict, parse_message

SESSION = "11111111-aaaa-bbbb-cccc-000000000000"


def user(uuid: str, content: Any, parent: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SESSION,
        "isSidechain": False,
        "message": {"role": "user", "content": content},
        **extra,
    }


def assistant(
    uuid: str,
    response: str,
    blocks: list[dict[str, Any]],
    parent: str | None = None,
    usage: dict[str, int] | None = None,
    model: str = "claude-sonnet-4-5",
    **extra: Any,
) -> dict[str, Any]:
    message = {"id": response, "role": "assistant", "model": model, "content": blocks}
    if usage is not None:
        message["usage"] = usage
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SESSION,
        "isSidechain": False,
        "message": message,
        **extra,
    }


def usage(input_tokens: int, read: int, write: int, output: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "output_tokens": output,
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call(call_id: str, name: str = "Read", args: Any = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args or {"path": "a"}}


def result(call_id: str, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)


def parse(data: bytes, fmt: str | None = None) -> ParsedFile:
    return parse_stream("session.jsonl", io.BytesIO(data), fmt)


HELLO = (
    user("u1", "hello"),
    assistant("a1", "msg_1", [text("hi")], "u1", usage(3, 0, 100, 5)),
)


def test_a_session_is_detected_and_becomes_one_main_run():
    parsed = parse(jsonl(*HELLO))
    assert parsed.format == "claude-code"
    (run,) = parsed.runs
    assert (run.format, run.session_id, run.subagent, run.model) == (
        "claude-code",
        SESSION,
        False,
        "claude-sonnet-4-5",
    )
    assert run.messages[0].parts == (TextPart("hello"),)
    assert run.messages[1].usage == Usage(3, 0, 100, 5, model=run.model)
    assert run.messages[1].usage.context == 103
    assert [m.source for m in run.messages] == ["line 1", "line 2"]
    assert parsed.warnings == ()


def test_an_empty_file_is_an_error_naming_the_file():
    with pytest.raises(FormatError, match=r"session\.jsonl: the file is empty"):
        parse(b"")


def test_a_file_without_messages_is_an_error_saying_what_was_expected():
    snapshot = {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}
    with pytest.raises(FormatError, match="no user or assistant messages found"):
        parse(jsonl(snapshot, snapshot), "claude-code")


def test_a_truncated_last_line_is_skipped_with_a_warning_and_the_rest_is_imported():
    data = jsonl(*HELLO) + b'{"type": "user", "uuid": "u2", "mess'
    parsed = parse(data)
    assert len(parsed.runs[0].messages) == 2
    assert parsed.warnings == ("session.jsonl: line 3: incomplete last line skipped",)


def test_unknown_record_types_are_ignored_and_counted_in_one_warning():
    skipped = [
        {"type": "progress", "sessionId": SESSION, "data": {"message": {"content": 1}}},
        {"type": "queue-operation", "sessionId": SESSION, "operation": "enqueue"},
        {"type": "system", "subtype": "informational", "sessionId": SESSION, "content": "x"},
    ]
    unknown = [{"type": "brand-new", "sessionId": SESSION}, {"type": "brand-new"}, {"x": 1}]
    parsed = parse(jsonl(*skipped, HELLO[0], *unknown, HELLO[1]))
    assert len(parsed.runs[0].messages) == 2
    assert parsed.warnings == ("session.jsonl: ignored 3 records of unknown type None, brand-new",)


def test_a_tool_result_without_a_matching_call_is_kept_as_a_tool_result_message():
    parsed = parse(jsonl(*HELLO, user("u2", [result("toolu_missing", "late")], "a1")))
    message = parsed.runs[0].messages[2]
    assert message.role == "user"
    assert message.kind == "tool_result"
    assert message.parts == (ToolResultPart("toolu_missing", "late"),)
    assert steps(parsed.runs[0])[-1].response is None  # the pending request


def test_one_response_over_several_lines_is_one_message_with_usage_counted_once():
    first = usage(10, 200, 30, 1)  # Claude Code repeats usage; output grows to the last line
    last = usage(10, 200, 30, 99)
    data = jsonl(
        user("u1", "read both"),
        assistant("a1", "msg_1", [{"type": "thinking", "thinking": "plan"}], "u1", first),
        assistant("a2", "msg_1", [call("t1", args={"path": "x"})], "a1", first),
        assistant("a3", "msg_1", [call("t2")], "a2", last),
        user("u2", [result("t1", "X")], "a3"),
        user("u3", [result("t2", [text("Y")], is_error=True)], "u2"),
        assistant("a4", "msg_2", [text("done")], "u3", usage(1, 230, 20, 4)),
    )
    (run,) = parse(data).runs
    assert request_count(run) == 2
    assert [m.kind for m in run.messages] == ["user", "tool_call", "tool_result", "assistant"]
    assert run.messages[1].parts == (
        ThinkingPart("plan", turn_only=True),  # Sonnet 4.5: sent within its turn only
        ToolCallPart("t1", "Read", '{"path": "x"}'),
        ToolCallPart("t2", "Read", '{"path": "a"}'),
    )
    assert run.messages[1].usage == Usage(10, 200, 30, 99, model=run.model)
    # Results of parallel calls are one user message, as sent to the model.
    assert run.messages[2].parts == (
        ToolResultPart("t1", "X"),
        ToolResultPart("t2", "Y", is_error=True),
    )
    assert run.messages[2].source == "line 5"
    assert [s.usage.context for s in steps(run) if s.usage] == [240, 251]


def test_lines_of_one_response_interleaved_with_results_join_the_first_line():
    u = usage(5, 0, 50, 7)
    data = jsonl(
        user("u1", "go"),
        assistant("a1", "msg_1", [call("t1")], "u1", u),
        user("u2", [result("t1")], "a1"),
        assistant("a2", "msg_1", [call("t2")], "u2", u),
        user("u3", [result("t2")], "a2"),
        assistant("a3", "msg_2", [text("ok")], "u3", u),
    )
    (run,) = parse(data).runs
    assert request_count(run) == 2
    assert [c.id for c in run.messages[1].tool_calls] == ["t1", "t2"]
    assert [r.call_id for r in run.messages[2].tool_results] == ["t1", "t2"]
    assert [m.role for m in run.messages] == ["user", "assistant", "user", "assistant"]


def test_images_become_image_parts_with_their_media_type():
    png = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}
    data = jsonl(
        user("u1", [text("what is this?"), png]),
        assistant("a1", "msg_1", [call("t1", "Read")], "u1"),
        user("u2", [result("t1", [text("a screenshot"), png])], "a1"),
    )
    (run,) = parse(data).runs
    assert run.messages[0].parts == (TextPart("what is this?"), ImagePart("image/png"))
    assert run.messages[2].parts == (ToolResultPart("t1", "a screenshot"),)


def test_non_utf8_bytes_are_an_error_naming_the_line():
    data = jsonl(*HELLO) + b'{"type": "user", "message": {"content": "caf\xe9"}}\n'
    with pytest.raises(FormatError, match=r"line 3: not valid UTF-8"):
        parse(data)


def test_a_message_that_is_not_an_object_is_an_error_naming_the_line():
    broken = {**HELLO[1], "message": "hi"}
    with pytest.raises(FormatError) as err:
        parse(jsonl(HELLO[0], broken))
    assert err.value.where == "line 2"
    assert "expected 'message' to be an object, found str" in str(err.value)


def test_content_of_a_wrong_type_is_an_error_naming_the_line_and_field():
    with pytest.raises(FormatError) as err:
        parse(jsonl(*HELLO, user("u2", 42, "a1")))
    assert err.value.where == "line 3"
    assert "message.content to be a string or a list of blocks, found int" in str(err.value)
    with pytest.raises(FormatError, match=r"line 3: expected message.content\[1\]\.text"):
        parse(jsonl(*HELLO, user("u2", [text("a"), {"type": "text", "text": 5}], "a1")))


def test_unknown_content_blocks_are_skipped_and_counted():
    blocks = [text("see"), {"type": "document", "source": {}}]
    parsed = parse(jsonl(user("u1", blocks), HELLO[1]))
    assert parsed.runs[0].messages[0].parts == (TextPart("see"),)
    assert parsed.warnings == ("session.jsonl: ignored 1 blocks of unknown type document",)


def test_redacted_thinking_is_a_thinking_part_without_text():
    data = jsonl(
        HELLO[0],
        assistant("a1", "msg_1", [{"type": "redacted_thinking", "data": "b64"}, text("x")], "u1"),
    )
    assert parse(data).runs[0].messages[1].parts == (
        ThinkingPart("", turn_only=True),
        TextPart("x"),
    )


def sidechain(record: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**record, "isSidechain": True, **extra}


def test_inline_sidechain_lines_become_one_run_per_subagent_even_when_interleaved():
    u = usage(4, 0, 1000, 9)
    data = jsonl(
        user("u1", "do two things"),
        assistant("a1", "msg_1", [call("task1", "Task"), call("task2", "Task")], "u1", u),
        sidechain(user("s1", "first task")),
        sidechain(user("s2", "second task")),
        sidechain(assistant("s1a", "msg_s1", [call("r1")], "s1", u)),
        sidechain(assistant("s2a", "msg_s2", [text("second done")], "s2", usage(4, 0, 900, 3))),
        sidechain(user("s1r", [result("r1")], "s1a")),
        sidechain(assistant("s1b", "msg_s1b", [text("first done")], "s1r", u)),
        user("u2", [result("task1", "first done"), result("task2", "second done")], "a1"),
        assistant("a2", "msg_2", [text("both done")], "u2", u),
    )
    main, first, second = parse(data).runs
    assert (main.subagent, first.subagent, second.subagent) == (False, True, True)
    assert [request_count(r) for r in (main, first, second)] == [2, 2, 1]
    assert [m.source for m in first.messages] == ["line 3", "line 5", "line 7", "line 8"]
    assert first.title == "first task"
    assert second.messages[-1].text == "second done"
    assert first.parent_session_id == second.parent_session_id == SESSION
    assert first.session_id != second.session_id
    assert main.session_id == SESSION


def test_a_subagent_file_yields_only_subagent_runs_grouped_by_agent_id():
    data = jsonl(
        sidechain(user("s1", "warm up"), agentId="a7"),
        sidechain(assistant("s2", "msg_1", [text("ready")], "s1", usage(1, 2, 3, 4)), agentId="a7"),
    )
    (run,) = parse(data).runs
    assert run.subagent
    assert run.session_id == "agent-a7"
    assert run.parent_session_id == SESSION
    assert run.title == "warm up"


def test_the_compaction_agents_file_is_its_sessions_compaction_request_not_a_subagent():
    from contextsim.analysis.problems import detect
    from contextsim.counting.estimators import ESTIMATORS
    from contextsim.engine.simulate import simulate_run

    data = jsonl(
        sidechain(user("s1", "Summarize this conversation"), agentId="acompact-9f3e"),
        sidechain(
            assistant("s2", "msg_1", [text("Summary: done")], "s1", usage(1, 150_000, 3, 900)),
            agentId="acompact-9f3e",
        ),
    )
    (run,) = parse(data).runs
    assert run.compaction_request and run.subagent
    assert run.parent_session_id == SESSION
    assert run.title == f"compaction request of {SESSION}"
    sim = simulate_run(
        run, ESTIMATORS["chars4"], POLICIES["none"], budget=400_000, hard_limit=10**6
    )
    assert [p.kind for p in detect(sim) if p.kind == "early_stop"] == []
    (other,) = parse(data.replace(b"acompact-9f3e", b"a7")).runs
    assert not other.compaction_request


BOUNDARY = {
    "type": "system",
    "subtype": "compact_boundary",
    "uuid": "b1",
    "parentUuid": None,
    "logicalParentUuid": "u2",
    "sessionId": SESSION,
    "compactMetadata": {"trigger": "auto", "preTokens": 155000},
}


def test_a_compact_boundary_is_a_compaction_before_the_summary_message():
    data = jsonl(
        *HELLO,
        user("u2", "go on", "a1"),
        BOUNDARY,
        user(
            "u3", "This session continues one that ran out of context.", "b1", isCompactSummary=True
        ),
        assistant("a3", "msg_3", [text("continuing")], "u3", usage(1, 0, 9000, 2)),
    )
    (run,) = parse(data).runs
    (compaction,) = run.compactions
    assert (compaction.before_message, compaction.pre_tokens, compaction.trigger) == (
        3,
        155000,
        "auto",
    )
    summary = run.messages[3]
    assert summary.compact_summary and summary.source == "line 5"
    assert not summary.is_user_turn


def test_a_tool_result_after_a_compact_boundary_is_not_merged_into_one_before_it():
    data = jsonl(*HELLO, user("u2", [result("t0")], "a1"), BOUNDARY, user("u3", [result("t1")]))
    (run,) = parse(data).runs
    assert [m.source for m in run.messages] == ["line 1", "line 2", "line 3", "line 5"]
    assert run.compactions[0].before_message == 3


def test_meta_lines_are_kept_as_sent_but_the_title_comes_from_what_the_user_typed():
    data = jsonl(
        user("m1", "Caveat: the messages below were generated locally.", isMeta=True),
        user("c1", "<command-name>/clear</command-name>\n<command-args></command-args>", "m1"),
        user("o1", "<local-command-stdout></local-command-stdout>", "c1"),
        user("u1", "  please   fix the\nbuild " + "x" * 100, "o1"),
        assistant("a1", "msg_1", [text("ok")], "u1"),
    )
    (run,) = parse(data).runs
    assert len(run.messages) == 5
    assert run.title.startswith("please fix the build xxx")
    assert len(run.title) == 80 and run.title.endswith("…")


def test_a_summary_record_titles_the_main_run_and_a_slash_command_is_the_fallback():
    summary = {"type": "summary", "summary": "Fixing the build", "leafUuid": "a1"}
    command = "<command-message>x</command-message>\n<command-name>/review</command-name>\n"
    with_args = command + "<command-args>PR 7</command-args>"
    assert parse(jsonl(summary, *HELLO)).runs[0].title == "Fixing the build"
    assert parse(jsonl(user("u1", with_args), HELLO[1])).runs[0].title == "/review PR 7"


def test_synthetic_messages_count_as_requests_without_usage_or_model():
    error = assistant(
        "a2", "msg_x", [text("API Error")], "u2", usage(0, 0, 0, 0), model="<synthetic>"
    )
    (run,) = parse(jsonl(*HELLO, user("u2", "again", "a1"), error)).runs
    assert request_count(run) == 2
    assert run.messages[-1].usage is None
    assert run.model == "claude-sonnet-4-5"


def test_a_record_written_twice_is_imported_once():
    (run,) = parse(jsonl(*HELLO, HELLO[1])).runs
    assert len(run.messages) == 2


def test_a_one_line_session_is_parsed():
    (run,) = parse(jsonl(HELLO[0])).runs
    assert run.messages[0].parts == (TextPart("hello"),)


def test_sniff_claims_claude_code_but_not_native_or_codex_files():
    importer = ClaudeCodeImporter()

    def source(*records: dict[str, Any]):
        return read_source("f.jsonl", io.BytesIO(jsonl(*records)))

    codex = {"type": "session_meta", "payload": {"id": "x"}}
    native = {"contextsim": 1, "type": "run", "title": "t"}
    assert importer.sniff(source(*HELLO))
    assert importer.sniff(source({"type": "summary", "summary": "s", "leafUuid": "x"}, *HELLO))
    assert not importer.sniff(source(native, {"type": "message", "role": "user"}))
    assert not importer.sniff(source(codex, {"type": "event_msg", "payload": {}}))
    assert not importer.sniff(source({"role": "user", "content": "x"}, {"role": "assistant"}))


# Real sessions written by Claude Code (see ../shared/corpus/SOURCES.md).


def corpus_file(corpus: Path, name: str) -> ParsedFile:
    parsed = parse_path(corpus / "claude_code" / name)
    assert parsed.format == "claude-code"
    assert parsed.warnings == ()
    return parsed


def peak(parsed: ParsedFile) -> int:
    return max(m.usage.context for r in parsed.runs for m in r.messages if m.usage)


def test_codemie_session_has_47_requests_65_tool_calls_and_a_141315_token_peak(corpus):
    parsed = corpus_file(corpus, "codemie_session-196820da.jsonl")
    (run,) = parsed.runs
    assert request_count(run) == 47
    assert all(m.usage is not None for m in run.messages if m.role == "assistant")
    assert peak(parsed) == 141_315
    assert sum(len(m.tool_calls) for m in run.messages) == 65
    assert run.model == "claude-sonnet-4-5-20250929"
    assert run.session_id == "196820da-1026-4b6f-a513-a6aae42da1a6"
    assert run.title.startswith("ultrathink there is logic")
    assert any(isinstance(p, ThinkingPart) and p.text for p in run.messages[4].parts)


def test_ccviewer_5c0375b4_has_20_requests_with_two_inline_subagents(corpus):
    parsed = corpus_file(corpus, "ccviewer_5c0375b4.jsonl")
    assert sum(request_count(r) for r in parsed.runs) == 20
    assert [r.subagent for r in parsed.runs] == [False, True, True]
    assert [request_count(r) for r in parsed.runs] == [10, 3, 7]
    assert {r.parent_session_id for r in parsed.runs[1:]} == {parsed.runs[0].session_id}


def test_ccviewer_fe5e1c67_has_170_requests_over_five_subagents_and_its_summary_title(corpus):
    parsed = corpus_file(corpus, "ccviewer_fe5e1c67.jsonl")
    main, *subagents = parsed.runs
    assert sum(request_count(r) for r in parsed.runs) == 170
    assert peak(parsed) == 42_726
    assert main.title == "Empty Repo Setup: CLAUDE.md Foundation Created"
    assert len(subagents) == 5 and all(r.subagent for r in subagents)
    assert [request_count(r) for r in parsed.runs] == [9, 9, 34, 40, 25, 53]


def _attachment(uuid: str, parent: str, attachment: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "attachment",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SESSION,
        "isSidechain": False,
        "attachment": attachment,
    }


def test_attachments_put_their_text_in_the_next_request_and_ui_events_nothing():
    skills = {"type": "skill_listing", "content": "- review: review a pull request"}
    tools = {"type": "deferred_tools_delta", "addedNames": ["WebFetch", "WebSearch"]}
    lines = [
        *HELLO,
        _attachment("t1", "a1", skills),
        _attachment("t2", "t1", tools),
        _attachment("t3", "t2", {"type": "task_reminder", "content": [], "itemCount": 0}),
        {"type": "ai-title", "sessionId": SESSION, "aiTitle": "Greeting"},
        user("u2", "next", "t3"),
    ]
    parsed = parse(b"\n".join(json.dumps(x).encode() for x in lines))
    (run,) = parsed.runs
    added = [m for m in run.messages if m.role == "system"]
    assert [m.text for m in added] == [
        "<system-reminder>\n- review: review a pull request\n</system-reminder>",
        "<system-reminder>\nWebFetch\nWebSearch\n</system-reminder>",
    ]
    assert parsed.warnings == ()  # attachments and UI records are known, not "unknown"
    # Their own kind in the composition, kept through the native form the store uses.
    assert {m.kind for m in added} == {"attachment"}
    again = [parse_message("t", m.source, message_to_dict(m)) for m in added]
    assert again == added


def test_a_compaction_agent_that_copies_the_sessions_responses_measures_only_its_own():
    # Claude Code 2.1.8x: the agent's file repeats the session's responses (same ids,
    # same usage) before the summary request; the session measured those already.
    data = jsonl(
        sidechain(user("s1", "hello"), agentId="acompact-77"),
        sidechain(
            assistant("s2", "msg_1", [text("hi")], "s1", usage(10, 0, 900, 5)),
            agentId="acompact-77",
        ),
        sidechain(user("s3", "do it", "s2"), agentId="acompact-77"),
        sidechain(
            assistant("s4", "msg_2", [text("done")], "s3", usage(20, 900, 40, 9)),
            agentId="acompact-77",
        ),
        sidechain(user("s5", "Summarize this conversation", "s4"), agentId="acompact-77"),
        sidechain(
            assistant("s6", "msg_3", [text("Summary")], "s5", usage(30, 960, 0, 300)),
            agentId="acompact-77",
        ),
    )
    (run,) = parse(data).runs
    assert run.compaction_request
    measured = [m.usage for m in run.messages if m.usage is not None]
    assert measured == [Usage(30, 960, 0, 300, model=run.model)]
