"""OpenTelemetry GenAI spans as OTLP JSON: an export ``{"resourceSpans": [{"scopeSpans":
[{"spans": [...]}]}]}``, or JSONL of them (the collector's file exporter).

Model call spans: ``gen_ai.operation.name`` chat, generate_content or text_completion,
or, lacking it, OpenLLMetry's ``llm.request.type`` chat/completion or messages. Read:

- GenAI semantic conventions, open-telemetry/semantic-conventions v1.37.0 on
  (docs/gen-ai/gen-ai-spans.md, gen-ai-input-messages.json, -output-messages.json):
  ``gen_ai.system_instructions`` (parts), ``gen_ai.input.messages`` (the history sent),
  ``gen_ai.output.messages`` (per choice; the first is kept), JSON text or structured.
  Parts: text, reasoning, tool_call, tool_call_response (``response``; ``result`` in
  drafts), server_tool_call(_response), blob/file/uri; other types kept as JSON text.
- OpenLLMetry (traceloop/openllmetry, OpenAI instrumentation shared/chat_wrappers.py):
  ``gen_ai.prompt.{i}.role|content|tool_call_id|tool_calls.{j}.id|name|arguments``,
  ``gen_ai.completion.{i}...``: a Chat Completions message flattened (lists as JSON).
- Usage: ``gen_ai.usage.input_tokens``, ``output_tokens``, ``cache_read.input_tokens``,
  ``cache_creation.input_tokens`` (OpenLLMetry: ``prompt_tokens`` ...). Input includes
  cached tokens (semconv PR #3163; OpenLLMetry sums them too): Usage.input_tokens =
  input - cache read - cache write, unless the cache counts exceed the input.

One run per trace: its calls in start order, rebuilt like logged exchanges
(exchanges.rebuild); a call without recorded input (content capture is opt-in) gets the
history so far. Not read: span events, Jaeger/Zipkin JSON; no subagent grouping.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any

from contextsim.formats.base import (
    Document,
    FormatError,
    Lines,
    ParsedFile,
    Source,
    arguments_text,
    expect,
    parse_time,
    text_of,
)
from contextsim.formats.exchanges import Exchange, rebuild, title_of, tool_definitions
from contextsim.formats.openai import OpenAIImporter
from contextsim.model import ROLES as MODEL_ROLES
from contextsim.model import (
    ImagePart,
    Message,
    Part,
    Role,
    Run,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

ROLES: dict[str, Role] = dict(zip(MODEL_ROLES, MODEL_ROLES, strict=True))
ROLES_EXPECTED = "system, user, assistant or tool"
OPENAI_PARTS = frozenset({"text", "image_url", "input_audio", "file", "refusal"})
USAGE = (  # input, cache read, cache write, output: gen_ai.usage.* names, current first
    ("input_tokens", "prompt_tokens"),
    ("cache_read.input_tokens", "cache_read_input_tokens"),
    ("cache_creation.input_tokens", "cache_creation_input_tokens"),
    ("output_tokens", "completion_tokens"),
)


@dataclass(frozen=True, slots=True)
class Attrs:
    """A span's decoded attributes and where the span is in the file."""

    path: str
    where: str
    values: dict[str, Any]
    start: float | None = None
    """The span's start and end (seconds since the epoch), if it has them."""
    end: float | None = None

    def at(self, key: str) -> str:
        return f"{self.where}.attributes['{key}']"


class OTelImporter:
    """OTLP JSON traces with GenAI spans (see the module docstring)."""

    name = "otel"
    label = "OpenTelemetry GenAI spans (OTLP JSON traces)"

    def sniff(self, source: Source) -> bool:
        """True when the document, or the first JSONL record, has ``resourceSpans``."""
        first = source.data if isinstance(source, Document) else source.sample[0].data
        return isinstance(first, dict) and isinstance(first.get("resourceSpans"), list)

    def parse(self, source: Source) -> ParsedFile:
        """One run per trace with model calls; FormatError naming a wrong value's path."""
        traces: dict[str, list[tuple[int, Exchange, bool]]] = defaultdict(list)
        for trace, start, attrs in _spans(source):
            if _is_call(attrs.values):
                traces[trace].append((start, *_call(attrs)))
        if not traces:
            raise FormatError(source.path, "$", "expected GenAI model call spans, found none")
        warnings = list(source.warnings) if isinstance(source, Lines) else []
        runs = tuple(_run(source.path, t, calls, warnings) for t, calls in traces.items())
        return ParsedFile(self.name, runs, tuple(warnings))


def _run(path: str, trace: str, calls: list[tuple[int, Exchange, bool]], out: list[str]) -> Run:
    """The trace's run; a call whose input was not recorded is sent the history so far."""
    exchanges, previous, blind = [], tuple[Message, ...](), 0
    for _, exchange, recorded in sorted(calls, key=lambda c: c[0]):
        request, blind = (exchange.request, blind) if recorded else (previous, blind + 1)
        exchanges.append(replace(exchange, request=request))
        previous = request + ((exchange.response,) if exchange.response else ())
    if blind:
        out.append(f"{path}: trace {trace}: {blind} call(s) recorded no input (content is opt-in)")
    messages, model = rebuild(path, exchanges, out)
    return Run(title_of(messages), messages, OTelImporter.name, model, session_id=trace)


def _spans(source: Source) -> Iterator[tuple[str, int, Attrs]]:
    """(trace id, start time in ns, attributes) of every span, in file order."""
    path = source.path
    lines = source if isinstance(source, Lines) else ()
    exports = [("$", source.data)] if isinstance(source, Document) else []
    for root, export in chain(exports, ((f"line {r.line}, $", r.data) for r in lines)):
        expect(path, root, export, dict, "an OTLP export object with 'resourceSpans'")
        for res, resource in _items(path, f"{root}.resourceSpans", export.get("resourceSpans")):
            for scope_at, scope in _items(path, f"{res}.scopeSpans", resource.get("scopeSpans")):
                for where, span in _items(path, f"{scope_at}.spans", scope.get("spans")):
                    trace = expect(path, f"{where}.traceId", span.get("traceId"), str, "a string")
                    start = str(span.get("startTimeUnixNano"))
                    values = _pairs(path, f"{where}.attributes", span.get("attributes"))
                    at = Attrs(
                        path,
                        where,
                        values,
                        parse_time(int(start)) if start.isdigit() else None,
                        _nanos(span.get("endTimeUnixNano")),
                    )
                    yield trace, int(start) if start.isdigit() else 0, at


def _nanos(value: Any) -> float | None:
    """An OTLP time (nanoseconds since the epoch, as a number or its text) in seconds."""
    text = str(value)
    return parse_time(int(text)) if text.isdigit() else None


def _items(path: str, where: str, value: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """The objects of the list `value` (absent: none), each with its JSON path."""
    for i, item in enumerate(() if value is None else expect(path, where, value, list, "a list")):
        yield f"{where}[{i}]", expect(path, f"{where}[{i}]", item, dict, "an object")


def _pairs(path: str, where: str, value: Any) -> dict[str, Any]:
    """OTLP key-value pairs (attributes, a kvlist) as a dict of decoded values."""
    pairs = {}
    for at, item in _items(path, where, value):
        key = expect(path, f"{at}.key", item.get("key"), str, "the attribute's key string")
        pairs[key] = _value(path, f"{at}.value", item.get("value"))
    return pairs


def _value(path: str, where: str, data: Any) -> Any:
    """An OTLP AnyValue as a plain value (arrays, kvlists and int64 strings decoded; an
    empty one None). Scalars are taken as written: their types are checked in use."""
    expect(path, where, data, dict, "an OTLP AnyValue object")
    for kind, value in data.items():
        at = f"{where}.{kind}"
        if kind in ("arrayValue", "kvlistValue"):
            values = expect(path, at, value, dict, "an object with 'values'").get("values")
            if kind == "kvlistValue":
                return _pairs(path, f"{at}.values", values)
            return [_value(path, w, v) for w, v in _items(path, f"{at}.values", values)]
        is_int = kind == "intValue" and isinstance(value, str) and value.lstrip("-").isdigit()
        return int(value) if is_int else value
    return None


def _is_call(values: dict[str, Any]) -> bool:
    """True for the span of one model call (see the module docstring)."""
    if values.get("gen_ai.operation.name") is not None:
        return values["gen_ai.operation.name"] in ("chat", "generate_content", "text_completion")
    recorded = "gen_ai.input.messages" in values or "gen_ai.prompt.0.role" in values
    return recorded or values.get("llm.request.type") in ("chat", "completion")


def _call(attrs: Attrs) -> tuple[Exchange, bool]:
    """A span's call (its first output carries its usage) and whether input was recorded."""
    values = attrs.values
    if "gen_ai.input.messages" in values or "gen_ai.output.messages" in values:
        request = _messages(attrs, "gen_ai.input.messages")
        outputs = _messages(attrs, "gen_ai.output.messages") or ()
    else:
        request = tuple(_indexed(attrs, "gen_ai.prompt")) or None
        outputs = tuple(_indexed(attrs, "gen_ai.completion"))
    system = _messages(attrs, "gen_ai.system_instructions")
    request = request if system is None else (*system, *(request or ()))
    if values.get("gen_ai.tool.definitions") is not None:
        key = "gen_ai.tool.definitions"
        tools = tool_definitions(attrs.path, attrs.at(key), _decoded(values[key]))
        request = request if tools is None else (tools, *(request or ()))
    response, usage = (outputs[0] if outputs else None), _usage(attrs)
    if usage is not None:
        response = replace(response or Message("assistant", (), source=attrs.where), usage=usage)
    model = str(values.get("gen_ai.response.model") or values.get("gen_ai.request.model") or "")
    exchange = Exchange(attrs.where, request or (), response, model, attrs.start, attrs.end)
    return exchange, request is not None


def _decoded(value: Any) -> Any:
    """A structured value as is; JSON text parsed (text that is not JSON as is)."""
    with suppress(ValueError):
        return json.loads(value) if isinstance(value, str) else value
    return value


def _messages(attrs: Attrs, key: str) -> tuple[Message, ...] | None:
    """A current-convention attribute's messages (instructions: one); None if absent."""
    if attrs.values.get(key) is None:
        return None
    at, value = attrs.at(key), _decoded(attrs.values[key])
    if key.endswith("instructions"):
        parts = [{"type": "text", "content": value}] if isinstance(value, str) else value
        return (Message("system", _parts(attrs.path, at, parts), source=at),)
    items = expect(attrs.path, at, value, list, "a JSON list of messages")
    output = key.endswith("output.messages")
    return tuple(_message(attrs.path, f"{at}[{i}]", m, output) for i, m in enumerate(items))


def _message(path: str, where: str, data: Any, output: bool) -> Message:
    """A ``{"role", "parts"}`` message; an output message is the assistant's."""
    expect(path, where, data, dict, "a message object with 'role' and 'parts'")
    role = "assistant" if output else data.get("role")
    if role not in ROLES:
        found = "nothing" if role is None else repr(role)
        raise FormatError(path, f"{where}.role", f"expected {ROLES_EXPECTED}, found {found}")
    return Message(ROLES[role], _parts(path, f"{where}.parts", data.get("parts")), source=where)


def _parts(path: str, where: str, value: Any) -> tuple[Part, ...]:
    items = expect(path, where, value, list, "a list of parts")
    return tuple(_part(path, f"{where}[{i}]", p) for i, p in enumerate(items))


def _part(path: str, where: str, data: Any) -> Part:
    """One part (see the module docstring)."""
    expect(path, where, data, dict, "a message part object")
    kind = data.get("type")
    if kind in ("text", "reasoning"):
        text = expect(path, f"{where}.content", data.get("content"), str, "a string")
        return ThinkingPart(text) if kind == "reasoning" else TextPart(text)
    call_id = data.get("id")
    if call_id is not None:  # the conventions allow a null id: it pairs with nothing
        expect(path, f"{where}.id", call_id, str, "a string or null")
    if kind in ("tool_call", "server_tool_call"):
        name = expect(path, f"{where}.name", data.get("name"), str, "the tool's name string")
        arguments = arguments_text(data.get("arguments" if kind == "tool_call" else kind))
        return ToolCallPart(call_id or "", name, arguments, kind != "tool_call")
    if kind in ("tool_call_response", "server_tool_call_response"):
        body = data.get(kind) if kind[0] == "s" else data.get("response", data.get("result"))
        return ToolResultPart(call_id or "", text_of(body))
    if kind in ("blob", "file", "uri", "file_data"):  # media
        media = data.get("mime_type") or data.get("modality")
        return ImagePart(media if isinstance(media, str) else "")
    return TextPart(json.dumps(data, ensure_ascii=False))


def _indexed(attrs: Attrs, prefix: str) -> list[Message]:
    """OpenLLMetry's ``{prefix}.{i}.{field}`` attributes as messages, i = 0, 1, ..."""
    messages: list[Message] = []
    while any(key.startswith(f"{prefix}.{len(messages)}.") for key in attrs.values):
        messages.append(_flat(attrs, f"{prefix}.{len(messages)}", prefix.endswith("completion")))
    return messages


def _flat(attrs: Attrs, prefix: str, output: bool) -> Message:
    """One indexed message, read as the Chat Completions message it flattens. A content
    list is stored as JSON text: read when its parts are OpenAI's, else kept as text."""
    head = f"{prefix}."
    fields = {k[len(head) :]: v for k, v in attrs.values.items() if k.startswith(head)}
    content = fields.get("content", fields.get("refusal"))
    parts = _decoded(content) if isinstance(content, str) and content[:2] == "[{" else None
    if isinstance(parts, list) and all(isinstance(p, dict) for p in parts):
        content = parts if {p.get("type") for p in parts} <= OPENAI_PARTS else content
    calls, j = [], 0
    while f"tool_calls.{j}.name" in fields:
        call = {k: fields.get(f"tool_calls.{j}.{k}") for k in ("name", "arguments")}
        calls.append({"id": fields.get(f"tool_calls.{j}.id"), "function": call})
        j += 1
    body = {"role": fields.get("role", "assistant" if output else None), "content": content}
    body |= {"tool_calls": calls or None, "tool_call_id": fields.get("tool_call_id")}
    return OpenAIImporter().message(attrs.path, attrs.at(prefix), body)


def _usage(attrs: Attrs) -> Usage | None:
    """The span's usage (see the module docstring); None without input tokens."""
    counts = [_tokens(attrs, names) for names in USAGE]
    if counts[0] is None:
        return None
    total, read, write, output = (c or 0 for c in counts)
    return Usage(total - read - write if read + write <= total else total, read, write, output)


def _tokens(attrs: Attrs, names: tuple[str, ...]) -> int | None:
    """The first ``gen_ai.usage.<name>`` present, as a count (digit strings accepted)."""
    for key in (f"gen_ai.usage.{name}" for name in names):
        value = attrs.values.get(key)
        value = int(value) if isinstance(value, str) and value.isdigit() else value
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        if value is not None:
            problem = f"expected a whole number of tokens >= 0, found {value!r}"
            raise FormatError(attrs.path, attrs.at(key), problem)
    return None
