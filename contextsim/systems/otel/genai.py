"""The message attributes of the GenAI semantic conventions and of OpenLLMetry, read
into messages (see contextsim.systems.otel.spans for the sources).

- Current conventions (open-telemetry/semantic-conventions v1.37.0 on:
  docs/gen-ai/gen-ai-spans.md, gen-ai-input-messages.json, -output-messages.json):
  ``gen_ai.system_instructions`` (parts), ``gen_ai.input.messages``,
  ``gen_ai.output.messages``, as JSON text or structured. Parts: text, reasoning,
  tool_call, tool_call_response (``response``; ``result`` in drafts),
  server_tool_call(_response), blob/file/uri; other types kept as JSON text.
- OpenLLMetry (traceloop/openllmetry, OpenAI instrumentation shared/chat_wrappers.py):
  ``gen_ai.prompt.{i}.role|content|tool_call_id|tool_calls.{j}.id|name|arguments``,
  ``gen_ai.completion.{i}...``: a Chat Completions message flattened (lists as JSON).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from contextsim.ingest.base import FormatError, arguments_text, expect, text_of
from contextsim.model import ROLES as MODEL_ROLES
from contextsim.model import (
    ImagePart,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from contextsim.systems.openai_api.format import OpenAIImporter
from contextsim.systems.otel.values import Attrs, decoded, indexed

ROLES: dict[str, Role] = dict(zip(MODEL_ROLES, MODEL_ROLES, strict=True))
ROLES_EXPECTED = "system, user, assistant or tool"
OPENAI_PARTS = frozenset({"text", "image_url", "input_audio", "file", "refusal"})
OPENAI = OpenAIImporter()


@dataclass(slots=True)
class Known:
    """The input messages one conversation's last call sent, as JSON text without its
    closing bracket and as read: a later call whose text starts the same repeats them,
    and only what follows is read (instrumentations send the whole history with every
    call, so reading it all again makes a conversation cost the square of its length).
    Text that starts the same encodes the same messages: JSON is read left to right."""

    text: str = ""
    messages: tuple[Message, ...] = ()


def messages(attrs: Attrs, key: str, known: Known | None = None) -> tuple[Message, ...] | None:
    """A current-convention attribute's messages (instructions: one); None if absent.
    With `known` (input messages only), messages it holds are reused (see Known) and
    it is updated with these."""
    raw = attrs.values.get(key)
    if raw is None:
        return None
    at = attrs.at(key)
    if key.endswith("instructions"):
        value = decoded(raw)
        parts = [{"type": "text", "content": value}] if isinstance(value, str) else value
        return (Message("system", _parts(attrs.path, at, parts), source=at),)
    old, value = _repeated(raw, known)
    items = expect(attrs.path, at, value, list, "a JSON list of messages")
    output = key.endswith("output.messages")
    new = (_message(attrs.path, f"{at}[{i}]", m, output) for i, m in enumerate(items, len(old)))
    found = (*old, *new)
    if known is not None and isinstance(raw, str) and raw.rstrip().endswith("]") and found:
        known.text, known.messages = raw.rstrip()[:-1].rstrip(), found
    return found


def _repeated(raw: Any, known: Known | None) -> tuple[tuple[Message, ...], Any]:
    """The messages of `known` that the JSON text `raw` repeats, and the rest of its
    list decoded (all of it, decoded, when it does not start with them)."""
    if known is None or not known.messages or not isinstance(raw, str):
        return (), decoded(raw)
    if not raw.startswith(known.text):
        return (), decoded(raw)
    rest = raw[len(known.text) :].lstrip()
    tail = decoded("[" + rest[1:]) if rest[:1] == "," else None
    if tail:  # "[a, ]" is no JSON: an empty tail after a comma is read whole, to fail
        return known.messages, tail
    if rest[:1] == "]":
        return known.messages, decoded("[" + rest)
    return (), decoded(raw)


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


def indexed_messages(attrs: Attrs, prefix: str) -> list[Message]:
    """OpenLLMetry's ``{prefix}.{i}.{field}`` attributes as messages, i = 0, 1, ..."""
    output = prefix.endswith("completion")
    return [
        _flat(attrs, f"{prefix}.{i}", fields, output)
        for i, fields in enumerate(indexed(attrs.values, prefix))
    ]


def _flat(attrs: Attrs, prefix: str, fields: dict[str, Any], output: bool) -> Message:
    """One indexed message, read as the Chat Completions message it flattens. A content
    list is stored as JSON text: read when its parts are OpenAI's, else kept as text."""
    content = fields.get("content", fields.get("refusal"))
    parts = decoded(content) if isinstance(content, str) and content[:2] == "[{" else None
    if isinstance(parts, list) and all(isinstance(p, dict) for p in parts):
        content = parts if {p.get("type") for p in parts} <= OPENAI_PARTS else content
    calls = [
        {"id": call.get("id"), "function": {k: call.get(k) for k in ("name", "arguments")}}
        for call in indexed(fields, "tool_calls")
        if "name" in call
    ]
    body = {"role": fields.get("role", "assistant" if output else None), "content": content}
    body |= {"tool_calls": calls or None, "tool_call_id": fields.get("tool_call_id")}
    return OPENAI.message(attrs.path, attrs.at(prefix), body)
