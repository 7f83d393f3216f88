"""OpenAI Chat Completions importer: message lists, request/response logs, Inspect logs."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from contextsim.cli.main import run_summary
from contextsim.ingest.base import FormatError, ParsedFile, Source, read_source
from contextsim.model import ImagePart, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, steps
from contextsim.systems.anthropic_api.format import AnthropicImporter
from contextsim.systems.inspect_ai.format import InspectImporter
from contextsim.systems.openai_api.format import OpenAIImporter

OPENAI = OpenAIImporter()
INSPECT = InspectImporter()


def source(data: Any, name: str = "log.json") -> Source:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return read_source(name, io.BytesIO(raw))


def jsonl(*records: Any) -> Source:
    return source("\n".join(json.dumps(r) for r in records).encode() + b"\n", "log.jsonl")


def parse(data: Any) -> ParsedFile:
    return OPENAI.parse(source(data))


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


CONVERSATION = [
    {"role": "developer", "content": "You are terse."},
    {"role": "user", "content": "List the files and read both"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("c1", "read", '{"p": "a"}'), call("c2", "read", '{"p": "b"}')],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "alpha"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "beta"}]},
    {"role": "assistant", "content": "Both read."},
]


def test_message_list_maps_roles_and_parallel_tool_calls_to_parts():
    parsed = parse(CONVERSATION)
    (run,) = parsed.runs
    assert parsed.format == run.format == "openai"
    assert [m.role for m in run.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert run.messages[2].parts == (
        ToolCallPart("c1", "read", '{"p": "a"}'),
        ToolCallPart("c2", "read", '{"p": "b"}'),
    )
    assert run.messages[3].parts == (ToolResultPart("c1", "alpha"),)
    assert run.messages[4].parts == (ToolResultPart("c2", "beta"),)
    assert [m.kind for m in run.messages[2:5]] == ["tool_call", "tool_result", "tool_result"]
    assert run.title == "List the files and read both"
    assert run.messages[4].source == "$[4]"


def test_message_list_is_detected_as_openai_not_anthropic():
    assert OPENAI.sniff(source(CONVERSATION))
    assert not AnthropicImporter().sniff(source(CONVERSATION))


def test_request_body_keeps_its_model_and_unknown_fields_are_ignored():
    body = {
        "model": "gpt-4.1",
        "temperature": 0,
        "messages": [{"role": "user", "content": "hi", "name": "ann", "x-extra": {"a": 1}}],
        "tools": [],
    }
    (run,) = parse(body).runs
    assert run.model == "gpt-4.1"
    assert run.messages[0].parts == (TextPart("hi"),)
    assert run.messages[0].source == "$.messages[0]"
    assert steps(run)[0].response is None  # the request is pending


def test_tool_result_without_its_call_is_kept():
    (run,) = parse(
        [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "gone", "content": "r"}]
    ).runs
    assert run.messages[1].parts == (ToolResultPart("gone", "r"),)
    assert run.messages[1].kind == "tool_result"


def test_images_become_image_parts_with_the_data_url_media_type():
    content = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
    ]
    (run,) = parse([{"role": "user", "content": content}]).runs
    assert run.messages[0].parts == (
        TextPart("what is this?"),
        ImagePart("image/png"),
        ImagePart(""),
    )


def test_legacy_function_call_and_reasoning_are_read():
    messages = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "reasoning_content": "need the tool",
            "content": None,
            "function_call": {"name": "weather", "arguments": '{"city": "Pécs"}'},
        },
        {"role": "function", "name": "weather", "content": "sunny"},
    ]
    (run,) = parse(messages).runs
    assert run.messages[1].parts == (
        ThinkingPart("need the tool"),
        ToolCallPart("weather", "weather", '{"city": "Pécs"}'),
    )
    assert run.messages[2].parts == (ToolResultPart("weather", "sunny"),)


def test_empty_array_is_not_claimed_and_cannot_be_parsed():
    assert not OPENAI.sniff(source([]))
    with pytest.raises(FormatError, match=r"\$: expected messages or exchanges, found an empty"):
        parse([])


def test_truncated_json_names_the_line():
    with pytest.raises(FormatError, match=r"log.json: line 3: invalid JSON"):
        source(b'[\n  {"role": "user", "content": "hi"},\n  {"role": "assis')


def test_non_utf8_bytes_name_the_line():
    with pytest.raises(FormatError, match=r"line 2: not valid UTF-8"):
        source(b'[{"role": "user",\n "content": "caf\xe9"}]')


def test_message_without_role_names_its_json_path():
    body = {"messages": [{"role": "user", "content": "a"}, {"content": "b"}]}
    with pytest.raises(FormatError) as err:
        parse(body)
    assert err.value.where == "$.messages[1].role"
    assert "expected system, developer, user, assistant, tool or function, found nothing" in str(
        err.value
    )


def test_wrong_content_type_and_tool_calls_not_a_list_name_their_paths():
    with pytest.raises(FormatError) as err:
        parse([{"role": "user", "content": 42}])
    assert err.value.where == "$[0].content"
    with pytest.raises(FormatError) as err:
        parse([{"role": "assistant", "tool_calls": {"id": "c1"}}])
    assert err.value.where == "$[0].tool_calls"
    assert "expected a list of tool calls, found dict" in str(err.value)


def response(message: dict[str, Any], prompt: int, cached: int = 0, out: int = 5) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": out,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


SYSTEM = {"role": "system", "content": "be brief"}
ASK = {"role": "user", "content": "read a"}
CALL = {"role": "assistant", "content": None, "tool_calls": [call("c1", "read", '{"p":"a"}')]}
# The client re-serializes the arguments when it sends the call back.
CALL_ECHO = {"role": "assistant", "content": "", "tool_calls": [call("c1", "read", '{"p": "a"}')]}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "A" * 50}
DONE = {"role": "assistant", "content": "done"}

PAIRS = [
    {"request": {"model": "gpt-4o", "messages": [SYSTEM, ASK]}, "response": response(CALL, 1200)},
    {
        "request": {"model": "gpt-4o", "messages": [SYSTEM, ASK, CALL_ECHO, RESULT]},
        "response": response(DONE, 1900, cached=1024),
    },
]


def test_pairs_rebuild_one_run_with_usage_normalized_for_cached_tokens():
    parsed = parse(PAIRS)
    (run,) = parsed.runs
    assert parsed.warnings == ()
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "tool", "assistant"]
    first, second = run.messages[2].usage, run.messages[4].usage
    assert first is not None and second is not None
    assert (first.input_tokens, first.cache_read, first.output_tokens) == (1200, 0, 5)
    assert (second.input_tokens, second.cache_read, second.cache_write) == (876, 1024, 0)
    assert second.context == 1900  # the prompt_tokens the API reported
    assert run.model == "gpt-4o"
    assert run.messages[2].source == "$[0].response.choices[0].message"
    assert run.messages[3].source == "$[1].request.messages[3]"
    assert run_summary(run)["max_measured_context"] == 1900


def test_jsonl_pairs_are_detected_and_errors_name_the_line_and_path():
    assert OPENAI.sniff(jsonl(*PAIRS))
    assert not AnthropicImporter().sniff(jsonl(*PAIRS))
    (run,) = OPENAI.parse(jsonl(*PAIRS)).runs
    assert run.messages[3].source == "line 2, $.request.messages[3]"
    broken = json.loads(json.dumps(PAIRS))
    broken[1]["request"]["messages"][2]["tool_calls"] = "c1"
    with pytest.raises(FormatError) as err:
        OPENAI.parse(jsonl(*broken))
    assert err.value.where == "line 2, $.request.messages[2].tool_calls"


def test_edited_history_keeps_the_full_history_and_warns():
    cleared = {**RESULT, "content": "[cleared]"}
    third = [SYSTEM, ASK, CALL_ECHO, cleared, DONE, {"role": "user", "content": "thanks"}]
    pairs = [*PAIRS, {"request": {"messages": third}, "response": response(DONE, 300)}]
    parsed = parse(pairs)
    (run,) = parsed.runs
    assert [m.text for m in run.messages[-2:]] == ["thanks", "done"]
    assert run.messages[3].parts == (ToolResultPart("c1", "A" * 50),)
    assert len(parsed.warnings) == 1
    assert "$[2]: 1 request(s) sent an edited history" in parsed.warnings[0]


def test_a_request_restarting_the_history_keeps_the_longest_and_warns():
    side = {
        "request": {"messages": [{"role": "user", "content": "title?"}]},
        "response": response(DONE, 9),
    }
    parsed = parse([PAIRS[0], side, PAIRS[1]])
    (run,) = parsed.runs
    assert len(run.messages) == 5
    assert [m.usage.context for m in run.messages if m.usage] == [1200, 1900]
    assert "left out 1 response(s) of other histories: $[1]" in parsed.warnings[0]


def test_response_without_usage_or_choices_leaves_the_request_pending():
    pairs = [{"request": {"messages": [ASK]}, "response": {"error": {"message": "overloaded"}}}]
    (run,) = parse(pairs).runs
    assert len(run.messages) == 1
    assert steps(run)[-1].response is None


def test_other_formats_are_not_claimed():
    claude_code = [
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "sessionId": "s", "message": {"role": "assistant", "content": []}},
    ]
    codex = [{"type": "session_meta", "payload": {}}, {"type": "response_item", "payload": {}}]
    for lines in (claude_code, codex):
        assert not OPENAI.sniff(jsonl(*lines))
    assert not OPENAI.sniff(source({"contextsim": 1, "runs": []}))
    assert not OPENAI.sniff(source([{"id": 0, "source": "user", "action": "message"}]))


def test_openhands_corpus_events_are_not_claimed(corpus):
    path = corpus / "openhands" / "basic.json"
    with path.open("rb") as stream:
        src = read_source(str(path), stream)
    assert not OPENAI.sniff(src) and not AnthropicImporter().sniff(src)
    with pytest.raises(FormatError, match=r"\$\[0\]: expected a chat message"):
        OPENAI.parse(src)
