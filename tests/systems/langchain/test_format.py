"""LangChain message dumps: real langchain_core messages dumped and read back, the three
file shapes, provider content blocks, errors that name the JSON path, and detection."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)

from contextsim.ingest.base import FormatError, read_source
from contextsim.ingest.detect import IMPORTERS, parse_stream
from contextsim.model import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    steps,
    tool_rounds,
)
from contextsim.systems.langchain.format import LangChainImporter
from tests.ingest.examples import Examples
from tests.systems.openhands import test_format as test_openhands
from tests.systems.swe_agent import test_format as test_swe_agent
from tests.systems.swe_agent.test_format import corpus_logs, read

LANGCHAIN = LangChainImporter()


EXAMPLES = Examples(LANGCHAIN, "state.json")
source, parse, error = EXAMPLES.source, EXAMPLES.parse, EXAMPLES.error


def lines(entries: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in entries)


def usage(total: int, out: int, read: int = 0, write: int = 0) -> dict[str, Any]:
    details = {"cache_read": read, "cache_creation": write}
    return {
        "input_tokens": total,
        "output_tokens": out,
        "total_tokens": total + out,
        "input_token_details": details,
    }


def agent_messages() -> list[BaseMessage]:
    """An agent run made with LangChain's own classes: two parallel calls, one failing."""
    return [
        SystemMessage("You are a careful coding agent."),
        HumanMessage("Which files mention TODO?"),
        AIMessage(
            content="Searching both folders.",
            tool_calls=[
                {"id": "call_a", "name": "grep", "args": {"pattern": "TODO", "path": "src"}},
                {"id": "call_b", "name": "grep", "args": {"pattern": "TODO", "path": "docs"}},
            ],
            usage_metadata=usage(1_200, 40, read=1_000),
            response_metadata={"model_name": "gpt-4.1-2025-04-14"},
        ),
        ToolMessage("src/a.py:3: # TODO", tool_call_id="call_a"),
        ToolMessage("docs: no such directory", tool_call_id="call_b", status="error"),
        AIMessage(
            content="Only src/a.py mentions TODO.",
            usage_metadata=usage(1_290, 12, read=1_152, write=100),
            response_metadata={"model_name": "gpt-4.1-2025-04-14"},
        ),
    ]


def dump(messages: list[BaseMessage]) -> bytes:
    return json.dumps(messages_to_dict(messages)).encode()


def test_a_dump_of_real_langchain_messages_reads_back_as_the_same_run():
    parsed = parse_stream("run.json", io.BytesIO(dump(agent_messages())))
    (run,) = parsed.runs
    assert parsed.format == run.format == "langchain"
    assert parsed.warnings == ()
    assert [m.role for m in run.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert run.messages[2].parts == (
        TextPart("Searching both folders."),
        ToolCallPart("call_a", "grep", '{"pattern": "TODO", "path": "src"}'),
        ToolCallPart("call_b", "grep", '{"pattern": "TODO", "path": "docs"}'),
    )
    assert run.messages[3].parts == (ToolResultPart("call_a", "src/a.py:3: # TODO"),)
    assert run.messages[4].parts == (
        ToolResultPart("call_b", "docs: no such directory", is_error=True),
    )
    (round_,) = tool_rounds(run)
    assert (round_.call, round_.results, round_.complete) == (2, (3, 4), True)
    assert run.model == "gpt-4.1-2025-04-14"
    assert run.title == "Which files mention TODO?"


def test_usage_metadata_counts_cache_reads_and_writes_apart_from_the_other_input():
    (run,) = parse_stream("run.json", io.BytesIO(dump(agent_messages()))).runs
    assert [s.usage for s in steps(run)] == [
        Usage(input_tokens=200, cache_read=1_000, cache_write=0, output_tokens=40),
        Usage(input_tokens=38, cache_read=1_152, cache_write=100, output_tokens=12),
    ]
    assert [s.usage.context for s in steps(run) if s.usage] == [1_200, 1_290]


def test_the_dump_survives_a_json_round_trip_and_reads_the_same_both_times():
    messages = agent_messages()
    once = json.loads(dump(messages))
    assert messages_from_dict(once) == messages  # LangChain loses nothing in JSON
    again = json.dumps(messages_to_dict(messages_from_dict(once))).encode()
    assert again == dump(messages)
    assert parse(again).runs == parse(once).runs


def test_saved_state_and_json_lines_give_the_same_messages_as_the_list():
    entries = messages_to_dict(agent_messages())
    listed = parse(entries).runs[0]
    state = LANGCHAIN.parse(source({"messages": entries, "thread_id": "t-1"})).runs[0]
    jsonl = LANGCHAIN.parse(source(lines(entries), "run.jsonl")).runs[0]
    for run in (state, jsonl):
        assert [m.parts for m in run.messages] == [m.parts for m in listed.messages]
        assert [m.usage for m in run.messages] == [m.usage for m in listed.messages]
        assert run.model == listed.model
    assert state.messages[2].source == "$.messages[2]"
    assert jsonl.messages[2].source == "line 3, $"
    assert listed.messages[2].source == "$[2]"


def test_anthropic_tool_use_blocks_in_the_content_are_the_tool_calls_in_content_order():
    reply = AIMessage(
        content=[
            {"type": "thinking", "thinking": "Check the size first.", "signature": "sig"},
            {"type": "tool_use", "id": "toolu_1", "name": "stat", "input": {}},
            {"type": "text", "text": "Then read it."},
        ],
        tool_calls=[{"id": "toolu_1", "name": "stat", "args": {"path": "a.txt"}}],
    )
    (run,) = parse(messages_to_dict([HumanMessage("size?"), reply])).runs
    assert run.messages[1].parts == (
        ThinkingPart("Check the size first."),
        ToolCallPart("toolu_1", "stat", '{"path": "a.txt"}'),
        TextPart("Then read it."),
    )


def test_server_side_tools_and_their_results_stay_inside_the_reply():
    reply = {
        "type": "ai",
        "data": {
            "content": [
                {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}},
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srv_1",
                    "content": [{"type": "text", "text": "3 results"}],
                },
                {"type": "server_tool_call", "id": "srv_2", "name": "code", "args": {"x": 1}},
                {"type": "server_tool_result", "tool_call_id": "srv_2", "status": "error"},
            ],
            "tool_calls": [],
        },
    }
    (run,) = parse([reply]).runs
    assert run.messages[0].parts == (
        ToolCallPart("srv_1", "web_search", "{}", server_side=True),
        ToolResultPart("srv_1", "3 results"),
        ToolCallPart("srv_2", "code", '{"x": 1}', server_side=True),
        ToolResultPart("srv_2", "", is_error=True),
    )
    assert tool_rounds(run)[0].complete


def test_invalid_tool_calls_follow_the_valid_ones_with_their_raw_arguments():
    reply = AIMessage(
        content="",
        tool_calls=[{"id": "c1", "name": "ls", "args": {}}],
        invalid_tool_calls=[{"id": "c2", "name": "cat", "args": "{'path':", "error": "bad"}],
    )
    (run,) = parse(messages_to_dict([reply])).runs
    assert run.messages[0].parts == (
        ToolCallPart("c1", "ls", "{}"),
        ToolCallPart("c2", "cat", "{'path':"),
    )


def test_reasoning_of_every_shape_becomes_thinking():
    reply = {
        "type": "AIMessageChunk",
        "data": {
            "content": [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}]},
                {"type": "reasoning", "reasoning": "standard block"},
                {"type": "redacted_thinking", "data": "opaque"},
            ],
            "additional_kwargs": {"reasoning_content": "deepseek style"},
        },
    }
    (run,) = parse([reply]).runs
    assert run.messages[0].parts == (
        ThinkingPart("deepseek style"),
        ThinkingPart("plan"),
        ThinkingPart("standard block"),
        ThinkingPart(""),
    )


def test_images_keep_the_media_type_their_block_names():
    ask = HumanMessage(
        content=[
            {"type": "text", "text": "Compare these."},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg"}},
            {"type": "image", "base64": "AAAA", "mime_type": "image/webp"},
            {"type": "image", "url": "https://example.com/cat.gif"},
        ]
    )
    (run,) = parse(messages_to_dict([ask])).runs
    assert run.messages[0].parts == (
        TextPart("Compare these."),
        ImagePart("image/png"),
        ImagePart("image/jpeg"),
        ImagePart("image/webp"),
        ImagePart(""),
    )


def test_chat_and_function_messages_map_their_roles():
    messages = [
        ChatMessage(content="Be terse.", role="developer"),
        ChatMessage(content="hi", role="user"),
        FunctionMessage(content="42", name="answer"),
    ]
    (run,) = parse(messages_to_dict(messages)).runs
    assert [m.role for m in run.messages] == ["system", "user", "tool"]
    assert run.messages[2].parts == (ToolResultPart("answer", "42"),)


def test_content_blocks_of_unmodelled_types_are_skipped_and_counted_in_one_warning():
    reply = {
        "type": "ai",
        "data": {
            "content": [
                {"type": "text", "text": "ok"},
                {"type": "non_standard", "value": {}},
                {"type": "citation"},
                {"type": "citation"},
            ]
        },
    }
    parsed = parse([reply])
    assert parsed.runs[0].messages[0].parts == (TextPart("ok"),)
    assert parsed.warnings == (
        "state.json: skipped content blocks of types not modelled: citation x2, non_standard x1",
    )


def ai(**data: Any) -> list[dict[str, Any]]:
    return [{"type": "ai", "data": {"content": "", **data}}]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("hi", "$: expected a list of LangChain messages or an object with 'messages', found str"),
        ({"messages": {}}, "$.messages: expected a list of messages, found dict"),
        ([], "$: expected at least one message, found none"),
        (["hi"], "$[0]: expected a message object with 'type' and 'data', found str"),
        ([{"type": "human"}], "$[0].data: expected the message's data object, found nothing"),
        (
            [{"type": "robot", "data": {"content": "x"}}],
            "$[0].type: expected system, human, ai, tool, chat or function, found 'robot'",
        ),
        (
            [{"data": {"content": "x"}}],
            "$[0].type: expected system, human, ai, tool, chat or function, found nothing",
        ),
        (
            [{"type": "chat", "data": {"content": "x", "role": "critic"}}],
            "$[0].data.role: expected system, developer, user, human, assistant or ai, "
            "found 'critic'",
        ),
        (
            [{"type": "tool", "data": {"content": "x"}}],
            "$[0].data.tool_call_id: expected the tool call id, found nothing",
        ),
        (
            [{"type": "human", "data": {"content": 7}}],
            "$[0].data.content: expected a string or a list, found int",
        ),
        (
            [{"type": "human", "data": {"content": [{"type": "text"}]}}],
            "$[0].data.content[0].text: expected a string, found nothing",
        ),
        (
            ai(content=[{"type": "tool_use", "name": "ls", "input": {}}]),
            "$[0].data.content[0].id: expected a string, found nothing",
        ),
        (
            ai(tool_calls={"id": "c1"}),
            "$[0].data.tool_calls: expected a list of tool calls, found dict",
        ),
        (
            ai(tool_calls=[{"name": "ls", "args": {}}]),
            "$[0].data.tool_calls[0].id: expected the tool call's id string, found nothing",
        ),
        (
            ai(tool_calls=[{"id": "c1", "args": {}}]),
            "$[0].data.tool_calls[0].name: expected the tool's name string, found nothing",
        ),
        (
            ai(usage_metadata={"output_tokens": 3}),
            "$[0].data.usage_metadata.input_tokens: expected a whole number of tokens, "
            "found nothing",
        ),
        (
            ai(usage_metadata={"input_tokens": "12"}),
            "$[0].data.usage_metadata.input_tokens: expected a whole number of tokens, found str",
        ),
        (
            ai(usage_metadata=usage(100, 1, read=80, write=30)),
            "$[0].data.usage_metadata: expected cache_read + cache_creation <= input_tokens",
        ),
    ],
)
def test_malformed_dumps_name_the_file_the_json_path_and_what_was_expected(data, message):
    assert error(data) == f"state.json: {message}"


def test_a_malformed_json_lines_entry_is_named_by_its_line():
    raw = lines(
        [*messages_to_dict([HumanMessage("hi")]), {"type": "human", "data": {"content": 1}}]
    )
    with pytest.raises(FormatError) as err:
        LANGCHAIN.parse(source(raw, "run.jsonl"))
    assert (
        str(err.value)
        == "run.jsonl: line 2, $.data.content: expected a string or a list, found int"
    )


def test_a_single_entry_read_as_a_document_is_a_one_message_run():
    (run,) = parse(messages_to_dict([HumanMessage("hi")])[0]).runs
    assert run.messages[0].parts == (TextPart("hi"),)
    assert run.messages[0].source == "$[0]"


# Detection: every shape is ours, nobody else's files are.


def shapes() -> dict[str, bytes]:
    entries = messages_to_dict(agent_messages())
    return {
        "list.json": json.dumps(entries).encode(),
        "state.json": json.dumps({"messages": entries}).encode(),
        "run.jsonl": lines(entries),
    }


def test_every_shape_is_detected_as_langchain_among_all_formats():
    for name, raw in shapes().items():
        assert parse_stream(name, io.BytesIO(raw)).format == "langchain", name


def test_no_other_importer_claims_any_shape_not_even_the_saved_state():
    # {"messages": [{"type", "data"}, ...]} looks like a request body, but its messages
    # have no role: the chat importers leave it alone.
    for name, raw in shapes().items():
        claimed = [n for n, i in IMPORTERS.items() if i.sniff(read_source(name, io.BytesIO(raw)))]
        assert claimed == ["langchain"], name


def other_examples() -> dict[str, bytes]:
    """The hand-written examples of every other importer's tests, as files."""
    return {
        **test_swe_agent.handwritten_examples(),
        "swe_agent.traj": json.dumps(test_swe_agent.TEXT_ACTION).encode(),
        "openhands.json": json.dumps(test_openhands.STREAM).encode(),
    }


def test_other_formats_hand_written_examples_are_not_claimed():
    for name, raw in other_examples().items():
        assert not LANGCHAIN.sniff(read_source(name, io.BytesIO(raw))), name


def test_no_corpus_file_is_claimed(corpus: Path):
    paths = corpus_logs(corpus)
    assert len(paths) >= 8
    for path in paths:
        assert not LANGCHAIN.sniff(read(path)), path


def test_a_message_type_that_is_not_a_string_is_named():
    entries = messages_to_dict([HumanMessage("hi"), AIMessage("ok")])
    entries[1]["type"] = ["ai"]
    with pytest.raises(
        FormatError, match=r"x\.json: \$\[1\]\.type: expected system, .* found list"
    ):
        parse_stream("x.json", io.BytesIO(json.dumps(entries).encode()), "langchain")
