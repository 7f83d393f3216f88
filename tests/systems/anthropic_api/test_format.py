"""Anthropic Messages importer: request bodies, block lists and request/response logs."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from contextsim.cli.main import run_summary
from contextsim.ingest.base import FormatError, ParsedFile, Source, read_source
from contextsim.model import ImagePart, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, steps
from contextsim.systems.anthropic_api.format import AnthropicImporter
from contextsim.systems.openai_api.format import OpenAIImporter

ANTHROPIC = AnthropicImporter()


def source(data: Any, name: str = "log.json") -> Source:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return read_source(name, io.BytesIO(raw))


def jsonl(*records: Any) -> Source:
    return source("\n".join(json.dumps(r) for r in records).encode() + b"\n", "log.jsonl")


def parse(data: Any) -> ParsedFile:
    return ANTHROPIC.parse(source(data))


def use(use_id: str, name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": data}


def result(use_id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use_id, "content": content, "is_error": is_error}


ASK = {"role": "user", "content": "Read both files"}
CALLS = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "two reads", "signature": "sig"},
        {"type": "text", "text": "Reading."},
        use("t1", "read", {"path": "a"}),
        use("t2", "read", {"path": "b"}),
    ],
}
RESULTS = {
    "role": "user",
    "content": [
        result("t1", "alpha"),
        result("t2", [{"type": "text", "text": "no such file"}], is_error=True),
    ],
}
BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": [{"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}}],
    "messages": [ASK, CALLS, RESULTS],
}


def test_request_body_maps_system_blocks_and_parallel_tool_uses():
    parsed = parse(BODY)
    (run,) = parsed.runs
    assert parsed.format == run.format == "anthropic"
    assert run.model == "claude-sonnet-4-5"
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "user"]
    assert run.messages[0].parts == (TextPart("Be careful."),)
    assert run.messages[2].parts == (
        ThinkingPart("two reads"),
        TextPart("Reading."),
        ToolCallPart("t1", "read", '{"path": "a"}'),
        ToolCallPart("t2", "read", '{"path": "b"}'),
    )
    assert run.messages[3].parts == (
        ToolResultPart("t1", "alpha"),
        ToolResultPart("t2", "no such file", is_error=True),
    )
    assert run.messages[3].kind == "tool_result"
    assert run.title == "Read both files"
    assert run.messages[3].source == "$.messages[2]"


def test_request_body_is_detected_as_anthropic_not_openai():
    assert ANTHROPIC.sniff(source(BODY))
    assert not OpenAIImporter().sniff(source(BODY))


def test_bare_message_list_with_tool_blocks_is_anthropic():
    messages = [ASK, CALLS, RESULTS]
    assert ANTHROPIC.sniff(source(messages))
    assert not OpenAIImporter().sniff(source(messages))
    (run,) = parse(messages).runs
    assert run.messages[2].source == "$[2]"


def test_plain_text_messages_are_left_to_the_openai_importer():
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert not ANTHROPIC.sniff(source(plain))
    (run,) = parse(plain).runs  # but they can still be read as Anthropic on request
    assert [m.text for m in run.messages] == ["hi", "hello"]


def test_system_string_images_documents_and_redacted_thinking():
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"},
    }
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf"}}
    note = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "notes"},
    }
    body = {
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": [image, pdf, note, {"type": "text", "text": "see"}]},
            {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xyz"}]},
        ],
    }
    (run,) = parse(body).runs
    assert run.messages[0].parts == (TextPart("Be brief."),)
    assert run.messages[1].parts == (
        ImagePart("image/jpeg"),
        ImagePart("application/pdf"),
        TextPart("notes"),
        TextPart("see"),
    )
    assert run.messages[2].parts == (ThinkingPart(""),)


def test_tool_result_without_its_call_and_unknown_fields_are_kept():
    messages = [{"role": "user", "content": [result("nowhere", "x")], "extra": 1, "id": "m"}]
    (run,) = parse(messages).runs
    assert run.messages[0].parts == (ToolResultPart("nowhere", "x"),)


def test_message_without_role_names_its_json_path():
    with pytest.raises(FormatError) as err:
        parse({"system": "s", "messages": [ASK, {"content": "no role"}]})
    assert err.value.where == "$.messages[1].role"
    assert "expected user or assistant, found nothing" in str(err.value)


def test_wrong_content_and_unknown_block_name_their_paths():
    with pytest.raises(FormatError) as err:
        parse({"system": "s", "messages": [{"role": "user", "content": {"text": "x"}}]})
    assert err.value.where == "$.messages[0].content"
    with pytest.raises(FormatError) as err:
        parse({"system": "s", "messages": [{"role": "user", "content": [{"type": "video"}]}]})
    assert err.value.where == "$.messages[0].content[0].type"
    assert "unknown content block type 'video'" in str(err.value)


def test_empty_array_truncated_json_and_non_utf8_are_clear_errors():
    assert not ANTHROPIC.sniff(source([]))
    with pytest.raises(FormatError, match=r"\$: expected messages or exchanges"):
        parse([])
    with pytest.raises(FormatError, match=r"line 2: invalid JSON"):
        source(b'{"system": "s",\n "messages": [')
    with pytest.raises(FormatError, match=r"line 1: not valid UTF-8"):
        source(b'{"system": "\xff"}')


def reply(
    content: list[dict[str, Any]], fresh: int, read: int = 0, write: int = 0
) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": "tool_use",
        "usage": {
            "input_tokens": fresh,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "output_tokens": 7,
        },
    }


FIRST = {"model": "claude-sonnet-4-5", "system": "sys", "messages": [ASK]}
SECOND = {**FIRST, "messages": [ASK, CALLS, RESULTS]}
PAIRS = [
    {"request": FIRST, "response": reply(CALLS["content"], 10, write=2000)},
    {
        "request": SECOND,
        "response": reply([{"type": "text", "text": "done"}], 50, read=2000, write=90),
    },
]


def test_pairs_rebuild_one_run_with_usage_per_request():
    parsed = parse(PAIRS)
    (run,) = parsed.runs
    assert parsed.warnings == ()
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "user", "assistant"]
    usages = [s.usage for s in steps(run)]
    assert [(u.input_tokens, u.cache_read, u.cache_write) for u in usages if u] == [
        (10, 0, 2000),
        (50, 2000, 90),
    ]
    assert run_summary(run)["max_measured_context"] == 2140
    assert run.messages[2].source == "$[0].response"
    assert run.model == "claude-sonnet-4-5"


def test_jsonl_pairs_are_detected_and_errors_name_the_line_and_path():
    assert ANTHROPIC.sniff(jsonl(*PAIRS))
    assert not OpenAIImporter().sniff(jsonl(*PAIRS))
    broken = json.loads(json.dumps(PAIRS))
    broken[1]["response"]["usage"]["input_tokens"] = "many"
    with pytest.raises(FormatError) as err:
        ANTHROPIC.parse(jsonl(*broken))
    assert err.value.where == "line 2, $.response.usage.input_tokens"
    assert "expected a whole number of tokens, found str" in str(err.value)


def test_resent_history_without_thinking_still_continues_the_run():
    stripped = {**CALLS, "content": CALLS["content"][1:]}
    second = {**SECOND, "messages": [ASK, stripped, RESULTS]}
    parsed = parse([PAIRS[0], {"request": second, "response": PAIRS[1]["response"]}])
    (run,) = parsed.runs
    assert parsed.warnings == ()
    assert isinstance(run.messages[2].parts[0], ThinkingPart)  # the response as produced
    assert len(run.messages) == 5


def test_claude_code_and_native_files_are_not_claimed():
    claude_code = [
        {
            "type": "user",
            "sessionId": "s",
            "message": {"role": "user", "content": [result("a", "x")]},
        },
        {
            "type": "assistant",
            "sessionId": "s",
            "message": {"role": "assistant", "content": [use("a", "r", {})]},
        },
    ]
    assert not ANTHROPIC.sniff(jsonl(*claude_code))
    assert not ANTHROPIC.sniff(source({"contextsim": 1, "system": "s", "messages": []}))
