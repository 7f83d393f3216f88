"""Steps, turns and rounds derived from a run."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contextsim.model import (
    Message,
    Run,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    request_count,
    steps,
    tool_rounds,
    user_turns,
)


def user(text: str = "u") -> Message:
    return Message("user", (TextPart(text),))


def assistant(*calls: str, usage: Usage | None = None) -> Message:
    parts = tuple(ToolCallPart(c, "t", "{}") for c in calls) or (TextPart("a"),)
    return Message("assistant", parts, usage)


def results(*ids: str) -> Message:
    return Message("user", tuple(ToolResultPart(i, "r") for i in ids))


def test_a_message_of_only_tool_results_is_not_a_user_turn():
    run = Run("r", (user(), assistant("a", "b"), results("a", "b"), assistant(), user("again")))
    assert run.messages[2].kind == "tool_result"
    assert run.messages[1].kind == "tool_call"
    assert [(t.start, t.end) for t in user_turns(run)] == [(0, 4), (4, 5)]


def test_each_assistant_message_is_a_request_and_a_trailing_user_message_is_pending():
    run = Run("r", (user(), assistant(usage=Usage(10, 5, 1, 2)), user()))
    got = steps(run)
    assert [(s.end, s.response) for s in got] == [(1, 1), (3, None)]
    assert got[0].usage is not None and got[0].usage.context == 16
    assert request_count(run) == 1


def test_parallel_calls_form_one_round_complete_only_when_every_call_is_answered():
    run = Run("r", (user(), assistant("a", "b"), results("a"), results("b"), assistant("c")))
    first, second = tool_rounds(run)
    assert (first.call, first.results, first.complete) == (1, (2, 3), True)
    assert (second.call, second.results, second.complete) == (4, (), False)


def test_server_side_calls_need_no_result():
    call = Message("assistant", (ToolCallPart("w", "web_search", "{}", server_side=True),))
    (only,) = tool_rounds(Run("r", (user(), call)))
    assert only.complete


messages = st.lists(
    st.sampled_from(["user", "assistant", "tool", "system"]).map(
        lambda role: Message(role, (TextPart(role),))  # type: ignore[arg-type]
    ),
    max_size=40,
)


@given(messages, messages)
def test_appending_messages_never_changes_earlier_requests(head, tail):
    before = steps(Run("r", tuple(head)))
    after = steps(Run("r", tuple(head + tail)))
    completed = [s for s in before if s.response is not None]
    assert after[: len(completed)] == tuple(completed)


@given(messages)
def test_request_histories_grow_and_end_before_their_response(items):
    got = steps(Run("r", tuple(items)))
    ends = [s.end for s in got]
    assert ends == sorted(ends) and len(set(ends)) == len(ends)
    assert all(s.response is None or s.response == s.end for s in got)
    assert len(got) == request_count(Run("r", tuple(items))) + (
        1 if items and items[-1].role != "assistant" else 0
    )
