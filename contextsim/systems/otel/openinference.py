"""OpenInference LLM spans (Arize-ai/openinference, spec/semantic_conventions.md and
spec/llm_spans.md), read as the Chat Completions messages they flatten.

- A model call: ``openinference.span.kind`` ``LLM``.
- Messages: ``llm.input_messages.{i}.message.role``, ``.message.content`` (text), or
  ``.message.contents.{j}.message_content.type`` (text, image, reasoning, ...) with
  ``.text`` or ``.image.image.url``; ``.message.tool_calls.{j}.tool_call.id``,
  ``.tool_call.function.name``, ``.tool_call.function.arguments`` (JSON text);
  ``.message.tool_call_id`` on a tool message. ``llm.output_messages`` likewise.
- Tools offered: ``llm.tools.{i}.tool.json_schema`` (JSON text of a tool definition).
- Usage: ``llm.token_count.prompt`` (which includes the cached tokens: the
  instrumentations' tests assert prompt = uncached + cache read + cache write),
  ``.completion``, ``.prompt_details.cache_read``, ``.prompt_details.cache_write``.
- Model: ``llm.response.model_name``, ``llm.model_name``, ``llm.request.model_name``.
- Session: ``session.id``.
"""

from __future__ import annotations

import json
from typing import Any

from contextsim.ingest.exchanges import tool_definitions
from contextsim.model import Message
from contextsim.systems.openai_api.format import OpenAIImporter
from contextsim.systems.otel.values import Attrs, decoded, indexed

SPAN_KIND = "openinference.span.kind"
INPUT, OUTPUT, TOOLS = "llm.input_messages", "llm.output_messages", "llm.tools"
USAGE = (  # input, cache read, cache write, output
    "llm.token_count.prompt",
    "llm.token_count.prompt_details.cache_read",
    "llm.token_count.prompt_details.cache_write",
    "llm.token_count.completion",
)
MODEL = ("llm.response.model_name", "llm.model_name", "llm.request.model_name")
SESSION = "session.id"
OPENAI = OpenAIImporter()


def records_messages(values: dict[str, Any]) -> bool:
    """True when the span holds OpenInference messages."""
    return any(key.startswith((f"{INPUT}.", f"{OUTPUT}.")) for key in values)


def messages(attrs: Attrs, prefix: str) -> tuple[Message, ...]:
    """The messages of ``llm.input_messages`` or ``llm.output_messages`` (an output
    message without a role is the assistant's); FormatError naming the attribute."""
    output = prefix == OUTPUT
    return tuple(
        _message(attrs, f"{prefix}.{i}", fields, output)
        for i, fields in enumerate(indexed(attrs.values, prefix))
    )


def _message(attrs: Attrs, prefix: str, fields: dict[str, Any], output: bool) -> Message:
    role = fields.get("message.role") or ("assistant" if output else None)
    body: dict[str, Any] = {"role": role, "content": fields.get("message.content")}
    contents = indexed(fields, "message.contents")
    if contents:
        body["content"] = [
            _content(c) for c in contents if c.get("message_content.type") != "reasoning"
        ]
        thoughts = [
            str(c.get("message_content.text") or "")
            for c in contents
            if c.get("message_content.type") == "reasoning"
        ]
        body["reasoning_content"] = "\n".join(thoughts)
    calls = indexed(fields, "message.tool_calls")
    body["tool_calls"] = [_call(c) for c in calls] or None
    body["tool_call_id"] = fields.get("message.tool_call_id")
    return OPENAI.message(attrs.path, attrs.at(prefix), body)


def _content(fields: dict[str, Any]) -> dict[str, Any]:
    """One ``message_content`` as a Chat Completions content part; a kind Chat
    Completions has no part for is kept as its JSON text."""
    kind = fields.get("message_content.type")
    if kind == "text":
        return {"type": "text", "text": fields.get("message_content.text")}
    if kind == "image":
        return {
            "type": "image_url",
            "image_url": {"url": fields.get("message_content.image.image.url")},
        }
    return {"type": "text", "text": json.dumps(fields, ensure_ascii=False, sort_keys=True)}


def _call(fields: dict[str, Any]) -> dict[str, Any]:
    function = {
        "name": fields.get("tool_call.function.name"),
        "arguments": fields.get("tool_call.function.arguments"),
    }
    return {"id": fields.get("tool_call.id"), "function": function}


def tools(attrs: Attrs) -> Message | None:
    """The tools offered (``llm.tools.{i}.tool.json_schema``) as one system message."""
    offered = indexed(attrs.values, TOOLS)
    if not offered:
        return None
    schemas = [decoded(t.get("tool.json_schema")) or {"name": t.get("tool.name")} for t in offered]
    return tool_definitions(attrs.path, attrs.at(TOOLS), schemas)
