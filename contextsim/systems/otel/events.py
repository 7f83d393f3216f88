"""GenAI content recorded as span events, as the conventions had it before they put the
messages on the span's attributes (v1.37), read as Chat Completions messages.

- semantic-conventions v1.28 to v1.36 (docs/gen-ai/gen-ai-events.md):
  ``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
  ``gen_ai.tool.message`` (body: ``content``, ``tool_calls`` [{id, type, function:
  {name, arguments}}], ``id`` = the tool call a tool message answers) and
  ``gen_ai.choice`` (body: ``index``, ``finish_reason``, ``message`` {role, content,
  tool_calls}); the first choice is kept. The conventions make them log records, and
  opentelemetry-instrumentation-openai-v2 2.4b0 emits them so, on the logs signal
  (utils.message_to_event and choice_to_event: ``LogRecord(event_name=..., body=...)``),
  so a trace receiver sees them only where they are recorded on the span. There the
  body is the JSON text of ``gen_ai.event.content`` (azure-ai-inference's tracing:
  ``_record_event(span, f"gen_ai.{role}.message", {"gen_ai.event.content":
  json.dumps(message)})``; Semantic Kernel likewise), else the event's own attributes.
- The same events sent as log records (`log_events`): each is the span event it
  stands for, on the span its record names (trace and span id), its body as
  ``gen_ai.event.content``; a receiver adds them to the span's events. The current
  conventions' one event, ``gen_ai.client.inference.operation.details`` (what
  opentelemetry-util-genai 1.1b0 emits with content capture ``event_only``), carries
  the call's message attributes (``gen_ai.input.messages``...): a receiver adds
  those the span lacks to its attributes (DETAILS).
- semantic-conventions v1.26 and v1.27: ``gen_ai.content.prompt`` (attribute
  ``gen_ai.prompt``) and ``gen_ai.content.completion`` (``gen_ai.completion``), each
  the JSON text of a list of Chat Completions messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from contextsim.ingest.base import FormatError, expect
from contextsim.model import Message
from contextsim.systems.openai_api.format import OpenAIImporter
from contextsim.systems.otel.values import Attrs, SpanEvent, any_value, decoded, items, pairs

MESSAGE_EVENTS = {
    f"gen_ai.{role}.message": role for role in ("system", "user", "assistant", "tool")
}
CHOICE, CONTENT = "gen_ai.choice", "gen_ai.event.content"
DETAILS = "gen_ai.client.inference.operation.details"
PROMPT, COMPLETION = "gen_ai.content.prompt", "gen_ai.content.completion"
OPENAI = OpenAIImporter()


def records_messages(attrs: Attrs) -> bool:
    """True when the span has events that carry messages."""
    names = (*MESSAGE_EVENTS, CHOICE, PROMPT, COMPLETION)
    return any(event.name in names for event in attrs.events)


def exchange(attrs: Attrs) -> tuple[tuple[Message, ...], Message | None]:
    """The messages the span's events say were sent, and the first choice (None when
    no event gives one); FormatError naming the event and attribute of a bad one."""
    sent: list[Message] = []
    reply: Message | None = None
    for event in attrs.events:
        if event.name in MESSAGE_EVENTS:
            sent.append(_message(attrs, event, MESSAGE_EVENTS[event.name]))
        elif event.name == PROMPT:
            sent.extend(_listed(attrs, event, "gen_ai.prompt"))
        elif reply is None and event.name == CHOICE:
            reply = _choice(attrs, event)
        elif reply is None and event.name == COMPLETION:
            reply = next(iter(_listed(attrs, event, "gen_ai.completion")), None)
    return tuple(sent), reply


def _body(attrs: Attrs, event: SpanEvent) -> tuple[str, dict[str, Any]]:
    """Where the event's body is and the body: ``gen_ai.event.content`` or the event's
    attributes other than the ``gen_ai.*`` ones."""
    if event.values.get(CONTENT) is None:
        own = {k: decoded(v) for k, v in event.values.items() if not k.startswith("gen_ai.")}
        return f"{event.where}.attributes", own
    where = f"{event.where}.attributes['{CONTENT}']"
    return where, expect(attrs.path, where, decoded(event.values[CONTENT]), dict, "a JSON object")


def _message(attrs: Attrs, event: SpanEvent, role: str) -> Message:
    where, body = _body(attrs, event)
    message = {
        "role": role,
        "content": body.get("content"),
        "tool_calls": decoded(body.get("tool_calls")),
        "tool_call_id": body.get("tool_call_id", body.get("id")),
    }
    return OPENAI.message(attrs.path, where, message)


def _choice(attrs: Attrs, event: SpanEvent) -> Message:
    where, body = _body(attrs, event)
    message = decoded(body.get("message")) or {}
    expect(attrs.path, f"{where}.message", message, dict, "a message object")
    reply = {k: v for k, v in message.items() if v is not None}
    return OPENAI.message(attrs.path, f"{where}.message", {**reply, "role": "assistant"})


def _listed(attrs: Attrs, event: SpanEvent, key: str) -> list[Message]:
    """A v1.27 event's list of messages (a choice's message taken from it)."""
    where = f"{event.where}.attributes['{key}']"
    listed = expect(attrs.path, where, decoded(event.values.get(key)), list, "a JSON list")
    found = []
    for i, item in enumerate(listed):
        inner = item.get("message") if isinstance(item, dict) and "message" in item else item
        if key == "gen_ai.completion" and isinstance(inner, dict):
            inner = {**inner, "role": inner.get("role") or "assistant"}
        found.append(OPENAI.message(attrs.path, f"{where}[{i}]", inner))
    return found


def log_events(
    path: str, export: Any, rejected: list[str]
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The GenAI message events of an OTLP JSON logs export (``{"resourceLogs": ...}``,
    ids in hex) as (trace id, span id, the span event it stands for: OTLP JSON, its
    time the record's, else when it was observed). Records of other events are
    skipped; a GenAI record that names no span, or cannot be read, is named in
    `rejected` ("log record <where>: <what was expected>"). FormatError when `export`
    is not a logs export at all."""
    expect(path, "$", export, dict, "an OTLP logs export object with 'resourceLogs'")
    for res, resource in items(path, "$.resourceLogs", export.get("resourceLogs")):
        for at, scope in items(path, f"{res}.scopeLogs", resource.get("scopeLogs")):
            for where, record in items(path, f"{at}.logRecords", scope.get("logRecords")):
                try:
                    found = _log_event(path, where, record)
                except FormatError as error:
                    rejected.append(f"log record {error.where}: {error.problem}")
                    continue
                if found is not None:
                    yield found


def _log_event(
    path: str, where: str, record: dict[str, Any]
) -> tuple[str, str, dict[str, Any]] | None:
    attributes = record.get("attributes") or []
    name = record.get("eventName") or pairs(path, f"{where}.attributes", attributes).get(
        "event.name"
    )
    if name not in MESSAGE_EVENTS and name not in (CHOICE, DETAILS):
        return None
    ids = []
    for key, digits in (("traceId", 32), ("spanId", 16)):
        value = record.get(key)
        if not (isinstance(value, str) and len(value) == digits and _hex(value)):
            expected = f"expected the {digits} hex digits of the span the event belongs to"
            raise FormatError(path, f"{where}.{key}", expected)
        ids.append(value)
    time = str(record.get("timeUnixNano") or record.get("observedTimeUnixNano") or "0")
    if name == DETAILS:
        return ids[0], ids[1], {"name": name, "timeUnixNano": time, "attributes": attributes}
    body = record.get("body")
    content = any_value(path, f"{where}.body", body) if body is not None else None
    recorded = [a for a in attributes if isinstance(a, dict) and a.get("key") != CONTENT]
    text = json.dumps(content if content is not None else {}, ensure_ascii=False, sort_keys=True)
    event = {
        "name": name,
        "timeUnixNano": time,
        "attributes": [*recorded, {"key": CONTENT, "value": {"stringValue": text}}],
    }
    return ids[0], ids[1], event


def _hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)
