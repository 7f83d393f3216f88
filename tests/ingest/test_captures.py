"""Captured calls placed in their conversations (contextsim.ingest.captures), the client's
session markers, and the Responses API reader."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.ingest.captures import (
    Conversation,
    Placement,
    choose,
    conversation,
    place,
    session_marker,
)
from contextsim.model import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from contextsim.systems.openai_api.responses import ResponsesDialect


def m(role: str, text: str) -> Message:
    return Message(role, (TextPart(text),))  # type: ignore[arg-type]


SYSTEM = m("system", "You are an agent.")


def test_a_request_repeating_the_conversation_extends_it():
    conv = conversation([SYSTEM, m("user", "hi"), m("assistant", "hello")])
    request = [SYSTEM, m("user", "hi"), m("assistant", " hello "), m("user", "more")]
    assert place(conv, request) == Placement("extend", 3)


def test_thinking_dropped_when_resending_does_not_break_the_conversation():
    answer = Message("assistant", (ThinkingPart("hmm"), TextPart("ok")))
    conv = conversation([m("user", "q"), answer])
    assert place(conv, [m("user", "q"), m("assistant", "ok"), m("user", "next")]).kind == "extend"


def test_the_same_request_again_replaces_the_last_answer():
    conv = conversation([m("user", "q"), m("assistant", "first try")])
    assert place(conv, [m("user", "q")]) == Placement("redo", 1)


def test_a_request_starting_with_the_last_answer_after_the_head_is_a_compaction():
    summary = "We fixed the parser; tests in test_parser.py pass; next is the CLI flag."
    conv = conversation(
        [
            SYSTEM,
            m("user", "fix it"),
            m("assistant", "done"),
            m("user", "summarize"),
            m("assistant", summary),
        ]
    )
    request = [
        SYSTEM,
        m("user", f"This session continues. Summary:\n{summary}"),
        m("user", "go on"),
    ]
    assert place(conv, request) == Placement("compaction", 1)
    # The view after it: the head and what follows the boundary.
    after = Conversation((*conv.keys, "s", "u"), conv.head, boundary=5)
    assert after.view == (conv.keys[0], "s", "u")


def test_a_short_last_answer_proves_no_compaction():
    conv = conversation([SYSTEM, m("user", "x"), m("assistant", "OK")])
    assert place(conv, [SYSTEM, m("user", "OK")]).kind == "new"


def test_another_system_prompt_is_another_conversation():
    summary = "A long enough summary of everything that happened in the conversation so far."
    conv = conversation([SYSTEM, m("user", "x"), m("assistant", summary)])
    other = [m("system", "You are a subagent."), m("user", summary)]
    assert place(conv, other).kind == "new"


def test_the_longest_extension_wins_then_the_most_recent():
    short = conversation([m("user", "a"), m("assistant", "b")])
    longer = conversation(
        [m("user", "a"), m("assistant", "b"), m("user", "c"), m("assistant", "d")]
    )
    request = [
        m("user", "a"),
        m("assistant", "b"),
        m("user", "c"),
        m("assistant", "d"),
        m("user", "e"),
    ]
    assert choose([short, longer], request) == (1, Placement("extend", 4))
    assert choose([short, short], request[:3]) == (0, Placement("extend", 2))
    assert choose([short], [m("user", "z")]) == (-1, Placement("new"))


words = st.text("abcdefgh ", min_size=1, max_size=12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(words, words), min_size=1, max_size=8), st.data())
def test_a_conversation_grown_call_by_call_is_always_extended(turns, data):
    messages = [SYSTEM]
    conv = None
    for question, answer in turns:
        request = [*messages, m("user", question)]
        if conv is not None:
            assert place(conv, request) == Placement("extend", len(messages))
            # A request that changed any message before the end continues nothing.
            at = data.draw(st.integers(1, len(messages) - 1))
            changed = [
                *request[:at],
                m(request[at].role, request[at].text + "!"),
                *request[at + 1 :],
            ]
            assert place(conv, changed).kind != "extend"
        messages = [*request, m("assistant", answer)]
        conv = conversation(messages)


def test_claude_codes_user_id_names_its_session():
    old = {
        "metadata": {"user_id": "user_9a_account_77_session_0b8f7c1e-aaaa-4bbb-8ccc-123456789abc"}
    }
    assert session_marker(old, {}) == "0b8f7c1e-aaaa-4bbb-8ccc-123456789abc"
    new = {"metadata": {"user_id": '{"device_id": "d", "session_id": "s-123"}'}}
    assert session_marker(new, {}) == "s-123"


def test_codex_names_its_session_by_header_or_cache_key():
    assert session_marker({}, {"session_id": "0199-abc"}) == "0199-abc"
    assert session_marker({"prompt_cache_key": "conv-9"}, {}) == "conv-9"
    assert session_marker({"metadata": {"user_id": "plain"}}, {}) == ""


def test_a_responses_request_reads_instructions_tools_and_items():
    body = {
        "model": "gpt-5-codex",
        "instructions": "You are Codex.",
        "tools": [{"type": "function", "name": "shell", "parameters": {}}],
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "sandbox"}],
            },
            {"role": "user", "content": "list"},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "shell",
                "arguments": '{"cmd":"ls"}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
            {"type": "compaction", "encrypted_content": "opaque"},
        ],
    }
    sent, model = ResponsesDialect().request("f", "$", body)
    assert model == "gpt-5-codex"
    assert [x.kind for x in sent] == [
        "tools",
        "system",
        "system",
        "user",
        "tool_call",
        "tool_result",
        "user",
    ]
    assert sent[4].parts == (ThinkingPart("think"), ToolCallPart("c1", "shell", '{"cmd":"ls"}'))
    assert sent[5].parts == (ToolResultPart("c1", "a.txt"),)
    assert sent[6].compact_summary and sent[6].parts == ()


def test_a_responses_answer_is_one_assistant_message_with_usage_apart_from_the_cache():
    body = {
        "id": "resp_1",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hi"}],
            },
            {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": "{}"},
        ],
        "usage": {
            "input_tokens": 1000,
            "input_tokens_details": {"cached_tokens": 800},
            "output_tokens": 20,
        },
    }
    answer, _ = ResponsesDialect().response("f", "$", body)
    assert answer is not None and answer.kind == "tool_call"
    assert answer.usage == Usage(200, cache_read=800, output_tokens=20)


def test_a_history_edited_before_the_last_answer_still_continues_the_conversation():
    call = Message("assistant", (ToolCallPart("toolu_1", "read", "{}"),))
    reminded = m("user", "fix it <system-reminder>todo list</system-reminder>")
    conv = conversation([SYSTEM, reminded, call])
    # The reminder is gone from the resent message; the tool call answer follows.
    request = [
        SYSTEM,
        m("user", "fix it"),
        call,
        Message("user", (ToolResultPart("toolu_1", "ok"),)),
    ]
    assert place(conv, request) == Placement("edited", 3)
    # Without the conversation's last answer it is another conversation.
    assert place(conv, [SYSTEM, m("user", "fix it")]).kind == "new"
