"""OpenTelemetry GenAI spans (OTLP JSON): the current conventions' message attributes,
OpenLLMetry's indexed attributes, usage, traces, errors that name the JSON path, and
detection. The examples are hand-made after the conventions (no real export is in the
corpus): an agent that asks for the weather, calls a tool, and answers."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, messages_to_dict

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
from contextsim.systems.otel.format import OTelImporter
from tests.ingest.examples import Examples
from tests.systems.langchain.test_format import other_examples, shapes
from tests.systems.swe_agent.test_format import corpus_logs, read

OTEL = OTelImporter()
TRACE = "5b8efff798038103d269b633813fc60c"
SPANS = "$.resourceSpans[0].scopeSpans[0].spans"


def value(v: Any) -> dict[str, Any]:
    """An OTLP AnyValue as the JSON mapping writes it (int64 as a decimal string)."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
    return {"stringValue": v}


def span(span_id: str, start: int, attrs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "traceId": extra.pop("trace", TRACE),
        "spanId": span_id,
        "parentSpanId": extra.pop("parent", "86ca8aa1a3b8c5e2"),
        "name": extra.pop("name", "chat gpt-4o"),
        "kind": 3,
        "startTimeUnixNano": str(1_760_000_000_000_000_000 + start * 1_000_000),
        "endTimeUnixNano": str(1_760_000_000_000_000_000 + start * 1_000_000 + 900_000),
        "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()],
        "status": {},
        **extra,
    }


def export(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": value("agent")}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "opentelemetry.instrumentation.openai_v2"},
                        "spans": list(spans),
                    }
                ],
            }
        ]
    }


EXAMPLES = Examples(OTEL, "traces.json", indent=1)
source, parse, error = EXAMPLES.source, EXAMPLES.parse, EXAMPLES.error


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


SYSTEM = [{"type": "text", "content": "You are a weather assistant."}]
ASK = text("user", "Weather in Paris?")
CALL = {
    "role": "assistant",
    "parts": [
        {
            "type": "tool_call",
            "id": "call_VSPy",
            "name": "get_weather",
            "arguments": {"city": "Paris"},
        }
    ],
    "finish_reason": "tool_call",
}
RESULT = {
    "role": "tool",
    "parts": [{"type": "tool_call_response", "id": "call_VSPy", "response": "rainy, 57°F"}],
}
ANSWER = {**text("assistant", "It is rainy, 57°F."), "finish_reason": "stop"}


def chat(
    span_id: str, start: int, sent: list[Any], reply: Any, tokens: tuple[int, ...], **attrs: Any
) -> dict[str, Any]:
    """A chat span of the current conventions, messages as JSON text (as the Python
    instrumentations record them)."""
    total, out, read = (*tokens, 0)[:3]
    return span(
        span_id,
        start,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.system_instructions": json.dumps(SYSTEM),
            "gen_ai.input.messages": json.dumps(sent),
            "gen_ai.output.messages": json.dumps([reply]),
            "gen_ai.usage.input_tokens": total,
            "gen_ai.usage.output_tokens": out,
            "gen_ai.usage.cache_read.input_tokens": read,
            **attrs,
        },
    )


AGENT = span(
    "86ca8aa1a3b8c5e2",
    0,
    {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"},
    parent="",
    name="invoke_agent weather",
)
TOOL = span(
    "b1c2d3e4f5a6b7c8",
    2,
    {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"},
    name="execute_tool get_weather",
)
FIRST = chat("aa11aa11aa11aa11", 1, [ASK], CALL, (180, 18))
SECOND = chat("bb22bb22bb22bb22", 3, [ASK, CALL, RESULT], ANSWER, (230, 11, 128))
# An exporter writes spans as they end: the second call before the agent span, and a
# tool span in between.
AGENT_RUN = export(SECOND, TOOL, FIRST, AGENT)


def test_an_agent_trace_becomes_one_run_of_its_chat_calls_in_start_order():
    parsed = parse_stream("traces.json", io.BytesIO(json.dumps(AGENT_RUN).encode()))
    (run,) = parsed.runs
    assert parsed.format == run.format == "otel"
    assert parsed.warnings == ()
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert run.messages[0].parts == (TextPart("You are a weather assistant."),)
    assert run.messages[2].parts == (ToolCallPart("call_VSPy", "get_weather", '{"city": "Paris"}'),)
    assert run.messages[3].parts == (ToolResultPart("call_VSPy", "rainy, 57°F"),)
    assert run.messages[4].parts == (TextPart("It is rainy, 57°F."),)
    assert tool_rounds(run)[0].complete
    assert (run.session_id, run.model, run.title) == (
        TRACE,
        "gpt-4o-2024-08-06",
        "Weather in Paris?",
    )
    assert run.messages[2].source == f"{SPANS}[2].attributes['gen_ai.output.messages'][0]"


def test_usage_counts_cached_tokens_apart_from_the_input_that_includes_them():
    (run,) = parse(AGENT_RUN).runs
    assert [s.usage for s in steps(run)] == [
        Usage(input_tokens=180, cache_read=0, cache_write=0, output_tokens=18),
        Usage(input_tokens=102, cache_read=128, cache_write=0, output_tokens=11),
    ]
    assert steps(run)[1].usage.context == 230


def test_cache_counts_larger_than_the_input_mean_it_was_reported_without_them():
    reply = chat("cc", 1, [ASK], ANSWER, (12, 5))
    reply["attributes"] += [
        {"key": "gen_ai.usage.cache_read.input_tokens", "value": {"intValue": 3000}},
        {"key": "gen_ai.usage.cache_creation.input_tokens", "value": {"intValue": "400"}},
    ]
    (run,) = parse(export(reply)).runs
    assert run.messages[-1].usage == Usage(12, 3_000, 400, 5)


def test_structured_message_attributes_read_like_json_text():
    structured = span(
        "dd",
        1,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": [ASK, CALL, RESULT],
            "gen_ai.output.messages": [ANSWER],
            "gen_ai.usage.input_tokens": 230,
        },
    )
    (run,) = parse(export(structured)).runs
    assert [m.parts for m in run.messages] == [
        m.parts for m in parse(AGENT_RUN).runs[0].messages[1:]
    ]


def test_every_part_type_of_the_conventions_is_read_and_unknown_ones_kept_as_json_text():
    sent = [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "What is in this picture?"},
                {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBO"},
                {"type": "uri", "modality": "image", "uri": "https://example.com/a.jpg"},
                {"type": "file", "modality": "document", "file_id": "file-1"},
            ],
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "Look at the colours."},
                {
                    "type": "server_tool_call",
                    "id": "ws_1",
                    "name": "web_search",
                    "server_tool_call": {"type": "web_search", "query": "cat"},
                },
                {
                    "type": "server_tool_call_response",
                    "id": "ws_1",
                    "server_tool_call_response": {"type": "web_search", "hits": 2},
                },
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "c0", "result": {"ok": True}}],
        },
        {"role": "user", "parts": [{"type": "emoji", "content": ":)"}]},
    ]
    call = span(
        "ee", 1, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(sent)}
    )
    (run,) = parse(export(call)).runs
    assert [m.parts for m in run.messages] == [
        (
            TextPart("What is in this picture?"),
            ImagePart("image/png"),
            ImagePart("image"),
            ImagePart("document"),
        ),
        (
            ThinkingPart("Look at the colours."),
            ToolCallPart(
                "ws_1", "web_search", '{"type": "web_search", "query": "cat"}', server_side=True
            ),
            ToolResultPart("ws_1", '{"type": "web_search", "hits": 2}'),
        ),
        (ToolResultPart("c0", '{"ok": true}'),),
        (TextPart('{"type": "emoji", "content": ":)"}'),),
    ]
    # The span recorded no output: its request is the one pending at the end.
    assert [(s.end, s.response) for s in steps(run)] == [(1, 1), (4, None)]


def test_only_the_first_choice_of_the_output_is_kept():
    two = chat("ff", 1, [ASK], ANSWER, (10, 4))
    two["attributes"][6] = {
        "key": "gen_ai.output.messages",
        "value": value(json.dumps([ANSWER, text("assistant", "Sunny.")])),
    }
    (run,) = parse(export(two)).runs
    assert [m.text for m in run.messages] == [
        "You are a weather assistant.",
        "Weather in Paris?",
        "It is rainy, 57°F.",
    ]


def test_calls_without_recorded_content_continue_the_history_with_their_usage():
    blind = [
        span(
            f"b{i}",
            i,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": n,
                "gen_ai.usage.output_tokens": 9,
            },
        )
        for i, n in enumerate((100, 160, 230))
    ]
    parsed = parse(export(*blind))
    (run,) = parsed.runs
    assert [(m.role, m.parts) for m in run.messages] == [("assistant", ())] * 3
    assert [s.usage.context for s in steps(run) if s.usage] == [100, 160, 230]
    assert parsed.warnings == (
        f"traces.json: trace {TRACE}: 3 call(s) recorded no input (content is opt-in)",
    )


def test_each_trace_is_a_run_and_spans_that_are_not_model_calls_are_ignored():
    other = "0af7651916cd43dd8448eb211c80319c"
    embed = span("e1", 5, {"gen_ai.operation.name": "embeddings", "gen_ai.usage.input_tokens": 8})
    http = span("h1", 6, {"http.request.method": "POST"}, name="POST")
    second = {**chat("z1", 9, [text("user", "And in Rome?")], ANSWER, (50, 7)), "traceId": other}
    parsed = parse(export(FIRST, embed, http, second))
    assert [r.session_id for r in parsed.runs] == [TRACE, other]
    assert [r.title for r in parsed.runs] == ["Weather in Paris?", "And in Rome?"]


def test_json_lines_from_a_collector_join_the_spans_of_one_trace():
    raw = b"".join(json.dumps(export(s)).encode() + b"\n" for s in (SECOND, FIRST))
    parsed = parse_stream("traces.jsonl", io.BytesIO(raw))
    assert parsed.format == "otel"
    (run,) = parsed.runs
    assert [m.parts for m in run.messages] == [m.parts for m in parse(AGENT_RUN).runs[0].messages]
    assert run.messages[2].source == (
        "line 2, $.resourceSpans[0].scopeSpans[0].spans[0].attributes['gen_ai.output.messages'][0]"
    )


# OpenLLMetry's indexed attributes (traceloop/openllmetry, OpenAI instrumentation).


def openllmetry(
    span_id: str,
    start: int,
    prompts: list[dict[str, Any]],
    completion: dict[str, Any],
    tokens: tuple[int, int, int],
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "llm.request.type": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.usage.prompt_tokens": tokens[0],
        "gen_ai.usage.completion_tokens": tokens[1],
        "gen_ai.usage.cache_read_input_tokens": tokens[2],
    }
    for prefix, messages in (("gen_ai.prompt", prompts), ("gen_ai.completion", [completion])):
        for i, message in enumerate(messages):
            for field, v in message.items():
                attrs[f"{prefix}.{i}.{field}"] = v
    return span(span_id, start, attrs, name="openai.chat")


PROMPTS = [
    {"role": "system", "content": "You are a weather assistant."},
    {
        "role": "user",
        "content": json.dumps(
            [
                {"type": "text", "text": "Weather where this was taken?"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}},
            ]
        ),
    },
]
TOOL_CALL = {
    "role": "assistant",
    "finish_reason": "tool_calls",
    "tool_calls.0.id": "call_1",
    "tool_calls.0.name": "get_weather",
    "tool_calls.0.arguments": '{"city":"Paris"}',
}
TOOL_RESULT = {"role": "tool", "content": "rainy", "tool_call_id": "call_1"}
OPENLLMETRY = export(
    openllmetry("o1", 1, PROMPTS, TOOL_CALL, (850, 20, 0)),
    openllmetry(
        "o2",
        3,
        [
            *PROMPTS,
            {"role": "assistant", **{k: v for k, v in TOOL_CALL.items() if k.startswith("tool")}},
            TOOL_RESULT,
        ],
        {"role": "assistant", "content": "Rainy."},
        (880, 4, 768),
    ),
)


def test_openllmetry_indexed_attributes_read_as_the_chat_completions_messages():
    parsed = parse_stream("openllmetry.json", io.BytesIO(json.dumps(OPENLLMETRY).encode()))
    (run,) = parsed.runs
    assert parsed.format == "otel"
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert run.messages[1].parts == (
        TextPart("Weather where this was taken?"),
        ImagePart("image/jpeg"),
    )
    assert run.messages[2].parts == (ToolCallPart("call_1", "get_weather", '{"city":"Paris"}'),)
    assert run.messages[3].parts == (ToolResultPart("call_1", "rainy"),)
    assert run.messages[4].parts == (TextPart("Rainy."),)
    assert [s.usage for s in steps(run)] == [Usage(850, 0, 0, 20), Usage(112, 768, 0, 4)]
    assert run.model == "gpt-4o-mini-2024-07-18"
    assert run.messages[1].source == f"{SPANS}[0].attributes['gen_ai.prompt.1']"


def test_an_openllmetry_content_list_that_is_not_openai_parts_stays_its_json_text():
    blocks = json.dumps([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}])
    call = openllmetry(
        "o1", 1, [{"role": "user", "content": blocks}], {"content": "Done."}, (9, 2, 0)
    )
    (run,) = parse(export(call)).runs
    assert run.messages[0].parts == (TextPart(blocks),)
    assert run.messages[1].parts == (TextPart("Done."),)


AT = f"{SPANS}[0]"
INPUT = f"{AT}.attributes['gen_ai.input.messages']"
TOKENS = f"{AT}.attributes['gen_ai.usage.input_tokens']"


def with_input(messages: Any) -> dict[str, Any]:
    return export(
        span("x1", 1, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": messages})
    )


def with_attribute(item: Any) -> dict[str, Any]:
    bad = span("x1", 1, {"gen_ai.operation.name": "chat"})
    bad["attributes"].append(item)
    return export(bad)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"resourceSpans": {}}, "$.resourceSpans: expected a list, found dict"),
        ({"resourceSpans": ["x"]}, "$.resourceSpans[0]: expected an object, found str"),
        (
            {"resourceSpans": [{"scopeSpans": [{"spans": 3}]}]},
            f"{SPANS}: expected a list, found int",
        ),
        (export({"spanId": "a"}), f"{AT}.traceId: expected a string, found nothing"),
        (
            with_attribute({"value": value("chat")}),
            f"{AT}.attributes[1].key: expected the attribute's key string, found nothing",
        ),
        (
            with_attribute({"key": "k", "value": "chat"}),
            f"{AT}.attributes[1].value: expected an OTLP AnyValue object, found str",
        ),
        (
            with_attribute({"key": "k", "value": {"arrayValue": []}}),
            f"{AT}.attributes[1].value.arrayValue: expected an object with 'values', found list",
        ),
        (with_input("not json"), f"{INPUT}: expected a JSON list of messages, found str"),
        (
            with_input(json.dumps([text("robot", "beep")])),
            f"{INPUT}[0].role: expected system, user, assistant or tool, found 'robot'",
        ),
        (
            with_input(json.dumps([{"role": "user"}])),
            f"{INPUT}[0].parts: expected a list of parts, found nothing",
        ),
        (
            with_input(json.dumps([{"role": "user", "parts": [{"type": "text"}]}])),
            f"{INPUT}[0].parts[0].content: expected a string, found nothing",
        ),
        (
            with_input(
                json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1"}]}])
            ),
            f"{INPUT}[0].parts[0].name: expected the tool's name string, found nothing",
        ),
        (
            with_input(
                json.dumps(
                    [
                        {
                            "role": "tool",
                            "parts": [{"type": "tool_call_response", "id": 7, "response": "x"}],
                        }
                    ]
                )
            ),
            f"{INPUT}[0].parts[0].id: expected a string or null, found int",
        ),
        (
            export(chat("x1", 1, [ASK], ANSWER, (-5, 1))),
            f"{TOKENS}: expected a whole number of tokens >= 0, found -5",
        ),
        (
            export(chat("x1", 1, [ASK], ANSWER, (1.5, 1))),
            f"{TOKENS}: expected a whole number of tokens >= 0, found 1.5",
        ),
        (
            export(
                openllmetry(
                    "x1", 1, [{"role": "robot", "content": "beep"}], {"content": "ok"}, (1, 1, 0)
                )
            ),
            f"{AT}.attributes['gen_ai.prompt.0'].role: expected system, developer, user, "
            "assistant, tool or function, found 'robot'",
        ),
        (export(AGENT, TOOL), "$: expected GenAI model call spans, found none"),
    ],
)
def test_malformed_exports_name_the_file_the_json_path_and_what_was_expected(data, message):
    assert error(data) == f"traces.json: {message}"


def test_a_malformed_json_lines_export_is_named_by_its_line():
    raw = (
        json.dumps(export(FIRST)).encode()
        + b"\n"
        + json.dumps({"resourceSpans": [3]}).encode()
        + b"\n"
    )
    with pytest.raises(FormatError) as err:
        OTEL.parse(source(raw, "traces.jsonl"))
    assert (
        str(err.value) == "traces.jsonl: line 2, $.resourceSpans[0]: expected an object, found int"
    )


# Detection: our exports are ours alone; nobody else's files are ours.


def exports() -> dict[str, bytes]:
    return {
        "agent.json": json.dumps(AGENT_RUN, indent=2).encode(),
        "openllmetry.json": json.dumps(OPENLLMETRY).encode(),
        "collector.jsonl": b"".join(
            json.dumps(export(s)).encode() + b"\n" for s in (FIRST, SECOND)
        ),
    }


def test_exports_are_detected_as_otel_and_claimed_by_no_other_importer():
    for name, raw in exports().items():
        assert parse_stream(name, io.BytesIO(raw)).format == "otel", name
        claimed = [n for n, i in IMPORTERS.items() if i.sniff(read_source(name, io.BytesIO(raw)))]
        assert claimed == ["otel"], name


def test_other_formats_hand_written_examples_are_not_claimed():
    examples = {
        **other_examples(),
        **shapes(),
        "one.json": json.dumps(messages_to_dict([HumanMessage("hi")])).encode(),
    }
    for name, raw in examples.items():
        assert not OTEL.sniff(read_source(name, io.BytesIO(raw))), name


def test_no_corpus_file_is_claimed(corpus: Path):
    paths = corpus_logs(corpus)
    assert len(paths) >= 8
    for path in paths:
        assert not OTEL.sniff(read(path)), path
