"""OpenHands event streams: messages, model calls with usage, observations as tool
results, skipped events, errors that name the JSON path, detection, and the real stream."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from contextsim.counting.estimators import ESTIMATORS
from contextsim.ingest.base import FormatError, ParsedFile, read_source
from contextsim.ingest.detect import IMPORTERS, parse_path, parse_stream
from contextsim.model import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    request_count,
    steps,
    tool_rounds,
)
from contextsim.systems.openhands.format import OpenHandsImporter
from tests.ingest.examples import Examples
from tests.systems.swe_agent.test_format import corpus_logs, handwritten_examples, read

OPENHANDS = OpenHandsImporter()


EXAMPLES = Examples(OPENHANDS, "events.json")
source, parse, error = EXAMPLES.source, EXAMPLES.parse, EXAMPLES.error


def say(event_id: int, text: str, who: str = "user", **args: Any) -> dict[str, Any]:
    return {
        "id": event_id,
        "source": who,
        "message": text,
        "action": "message",
        "args": {"content": text, "image_urls": None, **args},
    }


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def response(
    response_id: str, text: str, calls: list[dict[str, Any]], usage: dict[str, Any] | None
) -> dict[str, Any]:
    message = {"content": text, "role": "assistant", "tool_calls": calls, "function_call": None}
    return {
        "id": response_id,
        "model": "claude-3-5-sonnet-20241022",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        "usage": usage,
    }


def litellm_usage(prompt: int, read: int, write: int, out: int) -> dict[str, Any]:
    return {
        "completion_tokens": out,
        "prompt_tokens": prompt,
        "prompt_tokens_details": {"cached_tokens": read},
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
    }


def meta(call_id: str, name: str, model_response: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "function_name": name,
        "tool_call_id": call_id,
        "model_response": model_response,
        "total_calls_in_response": 2,
    }


def act(event_id: int, action: str, metadata: dict[str, Any], **args: Any) -> dict[str, Any]:
    return {
        "id": event_id,
        "source": "agent",
        "message": "",
        "action": action,
        "tool_call_metadata": metadata,
        "args": args,
    }


def observe(
    event_id: int, cause: int, metadata: dict[str, Any] | None, content: str, **extras: Any
) -> dict[str, Any]:
    event = {
        "id": event_id,
        "source": "agent",
        "message": "",
        "cause": cause,
        "observation": "run",
        "content": content,
        "extras": extras,
    }
    return {**event, "tool_call_metadata": metadata} if metadata is not None else event


TWO_READS = response(
    "chatcmpl-1",
    "Reading both.",
    [call("c1", "execute_bash", '{"command": "cat a"}'), call("c2", "execute_bash", "{}")],
    litellm_usage(1000, 600, 300, 40),
)
DONE = response(
    "chatcmpl-2", "Done.", [call("c3", "finish", "{}")], litellm_usage(1200, 900, 250, 9)
)
STREAM = [
    say(0, "Read a and b"),
    act(1, "run", meta("c1", "execute_bash", TWO_READS), command="cat a", thought="Reading both."),
    act(2, "run", meta("c2", "execute_bash", TWO_READS), command="cat b", thought=""),
    observe(3, 1, meta("c1", "execute_bash", TWO_READS), "alpha"),
    observe(4, 2, meta("c2", "execute_bash", TWO_READS), "beta"),
    {"id": 5, "source": "environment", "observation": "agent_state_changed", "content": ""},
    act(6, "finish", meta("c3", "finish", DONE), outputs={}, thought="Done."),
]


def test_one_response_driving_two_actions_is_one_assistant_message_with_both_calls():
    parsed = parse(STREAM)
    (run,) = parsed.runs
    assert parsed.format == run.format == "openhands"
    assert [m.role for m in run.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert run.messages[1].parts == (
        TextPart("Reading both."),
        ToolCallPart("c1", "execute_bash", '{"command": "cat a"}'),
        ToolCallPart("c2", "execute_bash", "{}"),
    )
    assert run.messages[2].parts == (ToolResultPart("c1", "alpha"),)
    assert run.messages[3].parts == (ToolResultPart("c2", "beta"),)
    assert [r.complete for r in tool_rounds(run)] == [True, False]  # finish gets no result
    assert run.messages[1].source == "$[1].tool_call_metadata.model_response"
    assert run.messages[3].source == "$[4]"


def test_usage_counts_cache_reads_and_writes_apart_and_context_equals_prompt_tokens():
    (run,) = parse(STREAM).runs
    assert [s.usage for s in steps(run)] == [Usage(100, 600, 300, 40), Usage(50, 900, 250, 9)]
    assert [s.usage.context for s in steps(run) if s.usage] == [1000, 1200]
    assert run.model == "claude-3-5-sonnet-20241022"
    assert run.title == "Read a and b"


def test_usage_with_only_cached_tokens_counts_them_as_cache_reads():
    usage = {
        "prompt_tokens": 500,
        "completion_tokens": 7,
        "prompt_tokens_details": {"cached_tokens": 128},
    }
    reply = response("r", "ok", [call("c1", "finish", "{}")], usage)
    (run,) = parse([say(0, "go"), act(1, "finish", meta("c1", "finish", reply))]).runs
    assert run.messages[1].usage == Usage(372, 128, 0, 7)


def test_events_the_model_is_not_sent_are_skipped_and_counted_in_one_warning():
    stream = [*STREAM, {"id": 7, "source": "agent", "action": "change_agent_state", "args": {}}]
    parsed = parse(stream)
    assert len(parsed.runs[0].messages) == 5
    assert parsed.warnings == (
        "events.json: skipped 2 event(s) the model was not sent: "
        "action change_agent_state x1, observation agent_state_changed x1",
    )
    assert parse(STREAM[:5]).warnings == ()


def test_an_observation_sends_its_formatted_report_rather_than_its_diff():
    edited = observe(3, 1, meta("c1", "str_replace_editor", TWO_READS), "--- a\n+++ a\n@@ ...")
    edited["extras"] = {"formatted_output_and_error": "File created successfully at: /a"}
    (run,) = parse([*STREAM[:3], edited]).runs
    assert run.messages[2].parts == (ToolResultPart("c1", "File created successfully at: /a"),)


def test_an_agent_message_without_metadata_is_a_plain_reply_without_usage():
    (run,) = parse([say(0, "hi"), say(1, "Hello! What shall I do?", who="agent")]).runs
    assert [m.role for m in run.messages] == ["user", "assistant"]
    assert run.messages[1].parts == (TextPart("Hello! What shall I do?"),)
    assert request_count(run) == 1 and steps(run)[0].usage is None


def test_metadata_without_a_model_response_gives_the_thought_and_one_call():
    action = act(1, "run", meta("c9", "execute_bash", None), command="ls", thought="List.")
    (run,) = parse(
        [say(0, "go"), action, observe(2, 1, meta("c9", "execute_bash", None), "a b")]
    ).runs
    assert run.messages[1].parts == (
        TextPart("List."),
        ToolCallPart("c9", "execute_bash", '{"command": "ls"}'),
    )
    assert run.messages[2].parts == (ToolResultPart("c9", "a b"),)
    assert run.model == ""


def test_images_of_a_user_message_become_image_parts_and_reasoning_is_kept():
    image = say(0, "What is this?", image_urls=["data:image/png;base64,iVBO", "https://x/y.jpg"])
    reply = response("r", "A cat.", [call("c1", "finish", "{}")], None)
    reply["choices"][0]["message"]["reasoning_content"] = "looks feline"
    (run,) = parse([image, act(1, "finish", meta("c1", "finish", reply))]).runs
    assert run.messages[0].parts == (
        TextPart("What is this?"),
        ImagePart("image/png"),
        ImagePart(""),
    )
    assert run.messages[1].parts[0] == ThinkingPart("looks feline")
    assert run.messages[1].usage is None


REPLY_AT = "$[1].tool_call_metadata.model_response"
USAGE_AT = f"{REPLY_AT}.usage"


def with_usage(usage: Any) -> list[dict[str, Any]]:
    reply = response("r", "", [call("c1", "finish", "{}")], usage)
    return [say(0, "go"), act(1, "finish", meta("c1", "finish", reply))]


def broken_tool_calls() -> list[dict[str, Any]]:
    reply = response("r", "", [], None)
    reply["choices"][0]["message"]["tool_calls"] = {"id": "c1"}
    return [say(0, "go"), act(1, "run", meta("c1", "bash", reply))]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"events": []}, "$: expected a list of OpenHands events, found dict"),
        ([], "$: expected at least one event, found an empty list"),
        (["hello"], "$[0]: expected an event object, found str"),
        ([{"id": 0, "source": "user"}], "$[0]: expected an event with 'action' or 'observation'"),
        (
            [{"id": 0, "action": "message"}],
            "$[0].source: expected the event's source string, found nothing",
        ),
        (
            [{"id": 0, "source": "user", "action": 3}],
            "$[0].action: expected the action's type string, found int",
        ),
        (
            [say(0, "x", image_urls="a.png")],
            "$[0].args.image_urls: expected a list of image URLs, found str",
        ),
        (
            [{**say(0, "go"), "tool_call_metadata": []}],
            "$[0].tool_call_metadata: expected an object, found list",
        ),
        (
            with_usage({"completion_tokens": 3}),
            f"{USAGE_AT}.prompt_tokens: expected a whole number of tokens, found nothing",
        ),
        (
            with_usage({"prompt_tokens": -1}),
            f"{USAGE_AT}.prompt_tokens: expected a whole number of tokens from 0 to 10^12, got -1",
        ),
        (
            with_usage(litellm_usage(100, 80, 30, 1)),
            f"{USAGE_AT}: expected cache read + cache creation tokens <= prompt_tokens",
        ),
        (
            [say(0, "go"), act(1, "finish", meta("c1", "finish", {"choices": []}))],
            f"{REPLY_AT}.choices: expected at least one choice, found none",
        ),
        (
            broken_tool_calls(),
            f"{REPLY_AT}.choices[0].message.tool_calls: expected a list of tool calls, found dict",
        ),
    ],
)
def test_malformed_streams_name_the_file_the_json_path_and_what_was_expected(data, message):
    assert error(data) == f"events.json: {message}"


def test_json_lines_are_not_an_event_stream():
    lines = b'{"id": 0, "source": "user", "action": "message"}\n{"id": 1}\n'
    with pytest.raises(FormatError) as err:
        OPENHANDS.parse(source(lines))
    assert str(err.value) == "events.json: line 1: expected one JSON document (a list of events)"


def test_the_stream_is_detected_among_all_formats():
    assert (
        parse_stream("events.json", io.BytesIO(json.dumps(STREAM).encode())).format == "openhands"
    )
    assert OPENHANDS.sniff(source([{"id": 0, "source": "user", "action": "message"}]))


def test_other_formats_hand_written_examples_are_not_claimed():
    for name, raw in handwritten_examples().items():
        assert not OPENHANDS.sniff(read_source(name, io.BytesIO(raw))), name
    assert not OPENHANDS.sniff(source([]))
    assert not OPENHANDS.sniff(source([say(0, "hi"), {"role": "user", "content": "x"}]))


def test_other_corpus_files_are_not_claimed_and_ours_is_claimed_by_no_other(corpus):
    others = [p for p in corpus_logs(corpus) if p.parent.name != "openhands"]
    assert len(others) >= 6
    for path in others:
        assert not OPENHANDS.sniff(read(path)), path
    (ours,) = corpus_logs(corpus, "openhands")
    assert [n for n, i in IMPORTERS.items() if i.sniff(read(ours))] == ["openhands"]


# The real stream written by OpenHands (see ../shared/corpus/SOURCES.md).


def basic(corpus: Path) -> ParsedFile:
    parsed = parse_path(corpus / "openhands" / "basic.json")
    assert parsed.format == "openhands"
    assert parsed.warnings == ()
    return parsed


def test_basic_stream_has_4_messages_2_measured_requests_and_2_calls(corpus):
    (run,) = basic(corpus).runs
    assert [m.role for m in run.messages] == ["user", "assistant", "tool", "assistant"]
    assert [m.source for m in run.messages] == [
        "$[0]",
        "$[1].tool_call_metadata.model_response",
        "$[2]",
        "$[3].tool_call_metadata.model_response",
    ]
    assert request_count(run) == len(steps(run)) == 2
    assert [s.usage for s in steps(run)] == [Usage(4, 0, 3482, 1135), Usage(6, 3482, 1158, 177)]
    assert [s.usage.context for s in steps(run) if s.usage] == [3486, 4646]
    calls = [c for m in run.messages for c in m.tool_calls]
    assert [(c.id, c.name) for c in calls] == [
        ("toolu_017nBp7UfiGqyrA7j77HgtFP", "str_replace_editor"),
        ("toolu_01BUKu3B7nY574atNECkBiFk", "finish"),
    ]
    assert run.messages[2].parts == (
        ToolResultPart(
            "toolu_017nBp7UfiGqyrA7j77HgtFP",
            "File created successfully at: /workspace/game_2048.py",
        ),
    )
    assert run.model == "claude-3-5-sonnet-20241022"
    assert run.title.startswith("Please create a simple 2048 game.")


def test_basic_stream_usage_shows_the_short_report_was_sent_not_the_diff(corpus):
    """Request 2 grew by 4,646 - 3,486 = 1,160 tokens: the 1,135 output tokens of the
    reply plus 25. The diff in the observation's content is 959 o200k tokens; the report
    ``formatted_output_and_error`` is 12, so the report is what the model was sent."""
    (run,) = basic(corpus).runs
    first, second = (s.usage for s in steps(run))
    assert first is not None and second is not None
    assert second.context - first.context - first.output_tokens == 25
    events = json.loads((corpus / "openhands" / "basic.json").read_text())
    o200k = ESTIMATORS["o200k"]
    assert o200k.count(events[2]["content"]) == 959
    assert o200k.count(run.messages[2].tool_results[0].text) == 12


def test_what_follows_the_finish_action_was_never_sent():
    """An observation answering the finish call (and a user message after it) come after
    the agent stopped: the run ends with the finish, and no request is pending."""
    late = [
        *STREAM,
        observe(7, 6, meta("c3", "finish", DONE), "finished"),
        say(8, "thanks"),
    ]
    (run,) = parse(late).runs
    assert [m.role for m in run.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert len(steps(run)) == 2
