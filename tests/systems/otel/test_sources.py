"""OpenTelemetry spans from other sources than the current GenAI attributes: OpenInference
(spec/semantic_conventions.md), the older conventions' span events (the body in
``gen_ai.event.content`` as azure-ai-inference writes it, or as the event's attributes
with the fields opentelemetry-instrumentation-openai-v2 puts in its event bodies, and
v1.27's prompt/completion events); grouping by conversation; and `calls_of` /
`runs_from`, the mapping the OTLP receiver shares with the file importer."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from contextsim.ingest.base import FormatError
from contextsim.ingest.detect import parse_stream
from contextsim.model import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpecPart,
    Usage,
)
from contextsim.systems.otel.spans import calls_of, runs_from
from tests.systems.otel.test_format import (
    AGENT_RUN,
    FIRST,
    SECOND,
    TRACE,
    export,
    parse,
    span,
    value,
)


def flattened(prefix: str, listed: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenInference's flattening of a list of objects: ``{prefix}.{i}.{key}``."""
    found: dict[str, Any] = {}
    for i, item in enumerate(listed):
        for key, v in item.items():
            if isinstance(v, list):
                found |= flattened(f"{prefix}.{i}.{key}", v)
            else:
                found[f"{prefix}.{i}.{key}"] = v
    return found


ASK = "Weather in Paris?"
WEATHER_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object"}},
}
OI_USER = {
    "message.role": "user",
    "message.contents": [
        {"message_content.type": "text", "message_content.text": "Weather where this was taken?"},
        {
            "message_content.type": "image",
            "message_content.image.image.url": "data:image/png;base64,iVBO",
        },
    ],
}
OI_CALL = {
    "message.role": "assistant",
    "message.contents": [
        {"message_content.type": "reasoning", "message_content.text": "Find the city first."}
    ],
    "message.tool_calls": [
        {
            "tool_call.id": "call_1",
            "tool_call.function.name": "get_weather",
            "tool_call.function.arguments": '{"city": "Paris"}',
        }
    ],
}
OI_RESULT = {"message.role": "tool", "message.content": "rainy", "message.tool_call_id": "call_1"}


def openinference(
    span_id: str, start: int, sent: list[Any], reply: Any, **extra: Any
) -> dict[str, Any]:
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        **flattened("llm.input_messages", sent),
        **flattened("llm.output_messages", [reply]),
        "llm.tools.0.tool.json_schema": json.dumps(WEATHER_TOOL),
        **extra,
    }
    return span(span_id, start, attributes, name="ChatCompletion")


def test_openinference_llm_spans_read_as_their_messages_tools_and_usage():
    first = openinference("a1", 1, [OI_USER], OI_CALL)
    second = openinference(
        "a2",
        3,
        [OI_USER, OI_CALL, OI_RESULT],
        {"message.role": "assistant", "message.content": "Rainy."},
        **{
            "llm.token_count.prompt": 900,
            "llm.token_count.completion": 4,
            "llm.token_count.prompt_details.cache_read": 700,
            "llm.token_count.prompt_details.cache_write": 150,
        },
    )
    (run,) = parse(export(first, second)).runs
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert run.messages[0].parts == (
        ToolSpecPart("get_weather", json.dumps(WEATHER_TOOL, separators=(",", ":"))),
    )
    assert run.messages[1].parts == (
        TextPart("Weather where this was taken?"),
        ImagePart("image/png"),
    )
    assert run.messages[2].parts == (
        ThinkingPart("Find the city first."),
        ToolCallPart("call_1", "get_weather", '{"city": "Paris"}'),
    )
    assert run.messages[3].parts == (ToolResultPart("call_1", "rainy"),)
    assert run.messages[4].parts == (TextPart("Rainy."),)
    # The prompt count includes what was read from and written to the cache.
    assert run.messages[4].usage == Usage(50, 700, 150, 4)
    assert run.model == "gpt-4o-mini"


def test_an_openinference_span_of_another_kind_is_not_a_model_call():
    chain = openinference("c1", 1, [OI_USER], OI_CALL, **{"openinference.span.kind": "CHAIN"})
    with pytest.raises(FormatError, match="expected GenAI model call spans, found none"):
        parse(export(chain))


def test_a_bad_openinference_message_is_named_by_its_attribute():
    bad = openinference("b1", 1, [{"message.role": "robot", "message.content": "beep"}], OI_CALL)
    with pytest.raises(FormatError) as error:
        parse(export(bad))
    assert "attributes['llm.input_messages.0'].role" in str(error.value)


def event(name: str, attributes: dict[str, Any]) -> dict[str, Any]:
    return {
        "timeUnixNano": "1760000000000500000",
        "name": name,
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
    }


def content_event(name: str, body: dict[str, Any]) -> dict[str, Any]:
    """azure-ai-inference's form: the body as JSON text in gen_ai.event.content."""
    return event(
        name, {"gen_ai.system": "az.ai.inference", "gen_ai.event.content": json.dumps(body)}
    )


CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.usage.input_tokens": 120,
    "gen_ai.usage.output_tokens": 9,
}
TOOL_CALLS = [
    {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
    }
]


def test_messages_in_span_events_with_the_body_in_event_content_are_read():
    events = [
        content_event("gen_ai.system.message", {"role": "system", "content": "Be brief."}),
        content_event("gen_ai.user.message", {"role": "user", "content": ASK}),
        content_event("gen_ai.assistant.message", {"role": "assistant", "tool_calls": TOOL_CALLS}),
        content_event(
            "gen_ai.tool.message", {"role": "tool", "tool_call_id": "call_1", "content": "rainy"}
        ),
        content_event(
            "gen_ai.choice", {"message": {"content": "Rainy."}, "finish_reason": "stop", "index": 0}
        ),
        content_event(
            "gen_ai.choice", {"message": {"content": "Wet."}, "finish_reason": "stop", "index": 1}
        ),
    ]
    (run,) = parse(export(span("e1", 1, CHAT, events=events))).runs
    assert [(m.role, m.parts) for m in run.messages] == [
        ("system", (TextPart("Be brief."),)),
        ("user", (TextPart(ASK),)),
        ("assistant", (ToolCallPart("call_1", "get_weather", '{"city":"Paris"}'),)),
        ("tool", (ToolResultPart("call_1", "rainy"),)),
        ("assistant", (TextPart("Rainy."),)),
    ]
    assert run.messages[-1].usage == Usage(120, 0, 0, 9)


def test_event_bodies_written_as_the_events_attributes_are_read_as_openai_v2_shapes_them():
    # utils.message_to_event: {"content"}, {"tool_calls"}, {"id", "content"} for a tool;
    # choice_to_event: {"index", "finish_reason", "message": {"role", "content"}}.
    events = [
        event("gen_ai.user.message", {"gen_ai.system": "openai", "content": ASK}),
        event("gen_ai.assistant.message", {"gen_ai.system": "openai", "tool_calls": TOOL_CALLS}),
        event(
            "gen_ai.tool.message", {"gen_ai.system": "openai", "id": "call_1", "content": "rainy"}
        ),
        event(
            "gen_ai.choice",
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Rainy."},
            },
        ),
    ]
    (run,) = parse(export(span("e1", 1, CHAT, events=events))).runs
    assert [(m.role, m.parts) for m in run.messages] == [
        ("user", (TextPart(ASK),)),
        ("assistant", (ToolCallPart("call_1", "get_weather", '{"city":"Paris"}'),)),
        ("tool", (ToolResultPart("call_1", "rainy"),)),
        ("assistant", (TextPart("Rainy."),)),
    ]


def test_v1_27_prompt_and_completion_events_hold_lists_of_messages():
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": ASK}]
    completion = [{"role": "assistant", "content": "Rainy."}]
    events = [
        event("gen_ai.content.prompt", {"gen_ai.prompt": json.dumps(prompt)}),
        event("gen_ai.content.completion", {"gen_ai.completion": json.dumps(completion)}),
    ]
    (run,) = parse(export(span("e1", 1, CHAT, events=events))).runs
    assert [m.text for m in run.messages] == ["Be brief.", ASK, "Rainy."]


def test_message_events_without_content_record_no_input():
    # Content capture is opt-in: without it the events say only who spoke.
    events = [event("gen_ai.user.message", {"gen_ai.system": "openai"})]
    parsed = parse(export(span("e1", 1, CHAT, events=events)))
    assert [(m.role, m.parts) for m in parsed.runs[0].messages] == [("assistant", ())]
    assert "1 call(s) recorded no input" in parsed.warnings[0]


def test_a_bad_event_body_is_named_by_its_event_and_attribute():
    events = [event("gen_ai.user.message", {"gen_ai.event.content": "[1, 2]"})]
    with pytest.raises(FormatError) as error:
        parse(export(span("e1", 1, CHAT, events=events)))
    assert str(error.value).endswith(
        ".spans[0].events[0].attributes['gen_ai.event.content']: expected a JSON object, found list"
    )


# Grouping, and the two doors of one mapping.


def test_calls_group_by_conversation_id_or_session_id_before_their_trace():
    other = "0af7651916cd43dd8448eb211c80319c"
    one = {**FIRST, "traceId": other}
    one["attributes"] = [
        *one["attributes"],
        {"key": "gen_ai.conversation.id", "value": value("c-1")},
    ]
    two = {**SECOND}
    two["attributes"] = [
        *two["attributes"],
        {"key": "gen_ai.conversation.id", "value": value("c-1")},
    ]
    oi = openinference("a1", 9, [OI_USER], OI_CALL, **{"session.id": "s-9"})
    plain = {**FIRST, "spanId": "ff"}
    runs = parse(export(two, one, oi, plain)).runs
    assert [r.session_id for r in runs] == ["c-1", "s-9", TRACE]
    assert [len(r.messages) for r in runs] == [5, 3, 3]


def test_calls_of_skips_other_spans_rejects_a_bad_call_by_id_and_keeps_the_rest():
    bad = span("bad1", 2, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "not json"})
    found = calls_of(
        AGENT_RUN | {"resourceSpans": AGENT_RUN["resourceSpans"] + export(bad)["resourceSpans"]}
    )
    assert [c.span_id for c in found.calls] == ["bb22bb22bb22bb22", "aa11aa11aa11aa11"]
    assert found.rejected == (
        "span bad1: $.resourceSpans[1].scopeSpans[0].spans[0].attributes['gen_ai.input.messages']: "
        "expected a JSON list of messages, found str",
    )
    assert {c.group for c in found.calls} == {TRACE}


def test_calls_of_raises_when_the_body_is_not_an_export():
    with pytest.raises(FormatError) as error:
        calls_of({"resourceSpans": [3]})
    assert str(error.value) == "request body: $.resourceSpans[0]: expected an object, found int"


def test_runs_from_calls_in_any_order_is_the_file_importers_run_with_its_times():
    found = calls_of(AGENT_RUN)
    (backwards,) = runs_from("traces.json", reversed(found.calls), [])
    (imported,) = parse_stream("traces.json", io.BytesIO(json.dumps(AGENT_RUN).encode())).runs
    assert backwards == imported
    # Each call's new messages sent at its span's start, its answer at the span's end
    # (the spans start 1 and 3 ms after the base and last 0.9 ms).
    base = 1_760_000_000.0
    assert [m.time for m in imported.messages] == pytest.approx(
        [base + 0.001, base + 0.001, base + 0.0019, base + 0.003, base + 0.0039], abs=1e-6
    )


def test_a_call_that_names_no_conversation_is_in_the_one_its_agents_span_names():
    """An agent's invoke span names the conversation, its chat spans (children, or
    grandchildren through a tool span) do not: they join it, across traces; a call
    with no ancestor naming one stays its trace's."""
    agent = span("86ca8aa1a3b8c5e2", 0, {"gen_ai.operation.name": "invoke_agent"}, parent="")
    agent["attributes"].append({"key": "gen_ai.conversation.id", "value": value("c-7")})
    tool = span("00000000000000f1", 0, {"gen_ai.operation.name": "execute_tool"})
    later = {**SECOND, "parentSpanId": "00000000000000f1"}
    other_trace = "0af7651916cd43dd8448eb211c80319c"
    second_agent = {**agent, "traceId": other_trace, "spanId": "00000000000000a9"}
    lone = {**FIRST, "traceId": other_trace, "spanId": "00000000000000b1", "parentSpanId": ""}
    found = calls_of(export(FIRST, later, tool, agent, second_agent, lone))
    assert [(c.group, c.own_group) for c in found.calls] == [
        ("c-7", False),
        ("c-7", False),
        (other_trace, False),
    ]
    assert (TRACE, "86ca8aa1a3b8c5e2", "c-7") in found.named
    runs = parse(export(FIRST, later, tool, agent)).runs
    assert [r.session_id for r in runs] == ["c-7"]
