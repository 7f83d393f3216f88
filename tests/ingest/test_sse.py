"""Streamed answers put back together (contextsim.ingest.sse), checked against the
providers' own SDKs, which accumulate the same events into the final message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.lib.streaming._messages import accumulate_event
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from contextsim.ingest import sse

texts = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.builds(lambda t: {"type": "thinking", "thinking": t, "signature": "sig"}, texts),
    st.builds(
        lambda n, args: {"type": "tool_use", "id": f"toolu_{n}", "name": f"tool{n}", "input": args},
        st.integers(0, 99),
        st.dictionaries(texts, json_values, max_size=3),
    ),
)


def _cuts(text: str, sizes: list[int]) -> list[str]:
    out, at = [], 0
    for size in sizes:
        out.append(text[at : at + size])
        at += size
    return [*out, text[at:]]


def anthropic_events(content: list[dict[str, Any]], sizes: list[int]) -> list[dict[str, Any]]:
    """The events the Messages API streams for `content`, deltas cut at `sizes`."""
    usage = {"input_tokens": 120, "output_tokens": 1, "cache_read_input_tokens": 30}
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for i, block in enumerate(content):
        empty = {"text": ""} if block["type"] == "text" else {}
        if block["type"] == "thinking":
            empty = {"thinking": "", "signature": ""}
        if block["type"] == "tool_use":
            empty = {"id": block["id"], "name": block["name"], "input": {}}
        start = {"type": block["type"], **empty}
        events.append({"type": "content_block_start", "index": i, "content_block": start})
        if block["type"] == "text":
            deltas = [{"type": "text_delta", "text": p} for p in _cuts(block["text"], sizes)]
        elif block["type"] == "thinking":
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in _cuts(block["thinking"], sizes)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            raw = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _cuts(raw, sizes)]
        events += [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": i})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 57},
        }
    )
    events.append({"type": "message_stop"})
    return events


def stream_text(events: list[dict[str, Any]], named: bool = True) -> str:
    lines = []
    for event in events:
        if named:
            lines.append(f"event: {event.get('type', '')}")
        lines.append(f"data: {json.dumps(event)}")
        lines.append("")
    return "\n".join(lines) + "\n"


@settings(max_examples=80, deadline=None)
@given(st.lists(blocks, max_size=4), st.lists(st.integers(0, 9), max_size=4))
def test_anthropic_streams_add_up_to_the_sdks_final_message(content, sizes):
    events = anthropic_events(content, sizes)
    snapshot, buffers = None, {}
    for event in events:
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=buffers)
    expected = snapshot.model_dump(mode="json", exclude_none=True)
    ours = sse.anthropic_message(stream_text(events))
    assert ours["content"] == [
        {k: v for k, v in b.items() if v is not None} for b in expected["content"]
    ]
    assert ours["usage"]["output_tokens"] == expected["usage"]["output_tokens"] == 57
    assert ours["usage"]["input_tokens"] == expected["usage"]["input_tokens"]
    assert ours["stop_reason"] == expected["stop_reason"]


calls = st.lists(
    st.tuples(
        st.sampled_from(["read", "write", "grep"]), st.dictionaries(texts, json_values, max_size=3)
    ),
    max_size=3,
)


@settings(max_examples=80, deadline=None)
@given(texts, calls, st.lists(st.integers(1, 9), max_size=4), st.booleans())
def test_chat_completion_streams_add_up_to_the_sdks_final_completion(text, tools, sizes, usage):
    head = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
    ]
    for piece in _cuts(text, sizes):
        chunks.append(
            {**head, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        )
    for i, (name, args) in enumerate(tools):
        first = {
            "index": i,
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        chunks.append(
            {
                **head,
                "choices": [{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}],
            }
        )
        for piece in _cuts(json.dumps(args), sizes):
            more = {"index": i, "function": {"arguments": piece}}
            chunks.append(
                {
                    **head,
                    "choices": [
                        {"index": 0, "delta": {"tool_calls": [more]}, "finish_reason": None}
                    ],
                }
            )
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if usage:
        chunks.append(
            {
                **head,
                "choices": [],
                "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
            }
        )
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    expected = state.get_final_completion()
    ours = sse.chat_completion(stream_text(chunks, named=False) + "data: [DONE]\n\n")
    message = ours["choices"][0]["message"]
    assert (message["content"] or None) == (expected.choices[0].message.content or None)
    theirs = expected.choices[0].message.tool_calls or []
    assert [
        (c["id"], c["function"]["name"], c["function"]["arguments"])
        for c in message.get("tool_calls", [])
    ] == [(c.id, c.function.name, c.function.arguments) for c in theirs]
    assert (ours["usage"] is None) == (expected.usage is None)


def test_events_follow_the_event_stream_rules():
    text = ": comment\nevent: a\ndata: 1\ndata: 2\n\ndata:3\n\nevent: b\n"
    assert list(sse.events(text)) == [sse.Event("a", "1\n2"), sse.Event("", "3")]


def test_a_stream_that_ends_in_an_error_event_is_an_error():
    events = [
        {
            "type": "message_start",
            "message": {"id": "m", "role": "assistant", "content": [], "usage": {}},
        },
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]
    with pytest.raises(sse.StreamError, match="Overloaded"):
        sse.anthropic_message(stream_text(events))


def test_a_responses_stream_is_its_terminal_events_response():
    done = {"id": "resp_1", "output": [], "usage": {"input_tokens": 3}}
    text = stream_text(
        [
            {"type": "response.created", "response": {"id": "resp_1"}},
            {"type": "response.output_text.delta", "delta": "x"},
            {"type": "response.completed", "response": done},
        ]
    )
    assert sse.response(text) == done
    with pytest.raises(sse.StreamError, match="before the response was complete"):
        sse.response(stream_text([{"type": "response.created", "response": {}}]))
