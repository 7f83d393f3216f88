"""OpenAI Chat Completions: message lists, request bodies, logged exchanges.

Accepted, as one JSON document or JSONL (one entry per line):
- a list of messages, or a request body ``{"model", "messages": [...]}``;
- logged exchanges ``{"request": {...}, "response": {"choices": [...], "usage": {...}}}``,
  rebuilt into one run (see exchanges.rebuild) with each response's usage;

Usage: OpenAI's prompt_tokens include the cached tokens, so the importer stores
input = prompt - cached and cache_read = cached; Usage.context equals prompt_tokens.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from contextsim.ingest.base import (
    FormatError,
    ParsedFile,
    Source,
    arguments_text,
    expect,
    text_of,
)
from contextsim.ingest.exchanges import (
    features,
    model_name,
    parse_chat,
    tokens,
    tool_definitions,
)
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
    Usage,
)
from contextsim.systems.anthropic_api.format import MARKERS as ANTHROPIC_MARKERS

# Chat Completions roles -> ours: developer is the newer name of system; function is
# the legacy form of tool.
ROLES: dict[str, Role] = {"developer": "system", "function": "tool", **{r: r for r in MODEL_ROLES}}
ROLES_EXPECTED = "system, developer, user, assistant, tool or function"
PARTS_EXPECTED = "text, image_url, input_audio, file or refusal"


class OpenAIImporter:
    """OpenAI Chat Completions logs (see the module docstring)."""

    name = "openai"
    label = "OpenAI Chat Completions messages, request/response logs"

    def sniff(self, source: Source) -> bool:
        """Claim chat-shaped entries without Anthropic markers.

        Plain ``{"role", "content"}`` messages carry no provider marker; they are the
        Chat Completions shape, and detection tries Anthropic first.
        """
        found = features(source)
        return found is not None and not found & ANTHROPIC_MARKERS

    def parse(self, source: Source) -> ParsedFile:
        return parse_chat(source, self)

    def message(self, path: str, where: str, data: Any) -> Message:
        """One Chat Completions message (including the legacy function-calling form)."""
        expect(path, where, data, dict, "a message object")
        role = data.get("role")
        if role not in ROLES:
            found = "nothing" if role is None else repr(role)
            raise FormatError(path, f"{where}.role", f"expected {ROLES_EXPECTED}, found {found}")
        content = data.get("content")
        if content is not None and not isinstance(content, str | list):
            expect(path, f"{where}.content", content, (str, list), "a string, a list or null")
        if role in ("tool", "function"):
            key = "tool_call_id" if role == "tool" else "name"
            call_id = _string(path, where, data, key)
            return Message("tool", (ToolResultPart(call_id, text_of(content)),), source=where)
        parts = [
            *_reasoning(data),
            *_content(path, f"{where}.content", content),
            *_tool_calls(path, where, data),
        ]
        return Message(ROLES[role], tuple(parts), source=where)

    def request(self, path: str, where: str, data: Any) -> tuple[tuple[Message, ...], str]:
        """The messages of a request body and its model."""
        expect(path, where, data, dict, "a request body with 'messages'")
        items = expect(path, f"{where}.messages", data.get("messages"), list, "a list")
        tools = tool_definitions(path, f"{where}.tools", data.get("tools"))
        sent = tuple(self.message(path, f"{where}.messages[{i}]", m) for i, m in enumerate(items))
        return ((tools, *sent) if tools else sent), model_name(data)

    def response(self, path: str, where: str, data: Any) -> tuple[Message | None, str]:
        """The first choice's message with the response's usage; None for an error."""
        expect(path, where, data, dict, "a response object")
        choices = data.get("choices")
        reply = None
        if choices is not None:
            expect(path, f"{where}.choices", choices, list, "a list of choices")
        if choices:
            first = expect(path, f"{where}.choices[0]", choices[0], dict, "a choice object")
            body = first.get("message")
            if isinstance(body, dict):
                # Some loggers drop the role of the reply; it can only be the assistant's.
                body = {"role": "assistant", **{k: v for k, v in body.items() if v is not None}}
                reply = self.message(path, f"{where}.choices[0].message", body)
        usage = data.get("usage")
        measured = None if usage is None else _usage(path, f"{where}.usage", usage)
        if reply is None and measured is None:
            return None, model_name(data)
        reply = reply or Message("assistant", (), source=where)
        return replace(reply, usage=measured), model_name(data)


def _string(path: str, where: str, data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    return str(expect(path, f"{where}.{key}", value, str, "a string"))


def _reasoning(data: dict[str, Any]) -> list[Part]:
    # Reasoning some compatible servers return (DeepSeek, OpenRouter, vLLM).
    for key in ("reasoning_content", "reasoning"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return [ThinkingPart(value)]
    return []


def _content(path: str, where: str, value: Any) -> list[Part]:
    if value is None:
        return []
    if isinstance(value, str):
        return [TextPart(value)] if value else []
    return [_content_part(path, f"{where}[{i}]", p) for i, p in enumerate(value)]


def _content_part(path: str, where: str, data: Any) -> Part:
    if isinstance(data, str):
        return TextPart(data)
    expect(path, where, data, dict, "a content part object")
    kind = data.get("type")
    if kind in ("text", "refusal"):
        key = str(kind)
        return TextPart(str(expect(path, f"{where}.{key}", data.get(key), str, "a string")))
    if kind == "image_url":
        image = data.get("image_url")
        url = str(image.get("url") if isinstance(image, dict) else image)
        # A data URL names its media type: data:image/png;base64,...
        inline = url.startswith("data:")
        return ImagePart(url[5:].split(";")[0].split(",")[0] if inline else "")
    if kind == "input_audio":
        audio = data.get("input_audio")
        form = audio.get("format") if isinstance(audio, dict) else None
        return ImagePart(f"audio/{form}" if isinstance(form, str) else "audio")
    if kind == "file":
        return ImagePart("application/octet-stream")
    raise FormatError(
        path, f"{where}.type", f"unknown content part type {kind!r}; expected {PARTS_EXPECTED}"
    )


def _tool_calls(path: str, where: str, data: dict[str, Any]) -> list[Part]:
    calls = data.get("tool_calls")
    legacy = data.get("function_call")
    parts: list[Part] = []
    if isinstance(legacy, dict):
        # Legacy function calling has no call ids: the function name pairs call and result.
        name = _string(path, f"{where}.function_call", legacy, "name")
        parts.append(ToolCallPart(name, name, arguments_text(legacy.get("arguments"))))
    if calls is None:
        return parts
    expect(path, f"{where}.tool_calls", calls, list, "a list of tool calls")
    return parts + [_tool_call(path, f"{where}.tool_calls[{i}]", c) for i, c in enumerate(calls)]


def _tool_call(path: str, where: str, data: Any) -> ToolCallPart:
    expect(path, where, data, dict, "a tool call object")
    call_id = _string(path, where, data, "id")
    if data.get("type") == "custom":
        custom = expect(path, f"{where}.custom", data.get("custom"), dict, "an object")
        name = _string(path, f"{where}.custom", custom, "name")
        return ToolCallPart(call_id, name, arguments_text(custom.get("input")))
    function = expect(path, f"{where}.function", data.get("function"), dict, "an object")
    name = str(expect(path, f"{where}.function.name", function.get("name"), str, "a string"))
    return ToolCallPart(call_id, name, arguments_text(function.get("arguments")))


def _usage(path: str, where: str, data: Any) -> Usage:
    expect(path, where, data, dict, "a usage object")
    prompt = tokens(path, where, data, "prompt_tokens", required=True)
    details = data.get("prompt_tokens_details")
    cached = 0
    if details is not None:
        inner = f"{where}.prompt_tokens_details"
        cached = tokens(
            path, inner, expect(path, inner, details, dict, "an object"), "cached_tokens"
        )
    if cached > prompt:
        raise FormatError(path, where, "expected cached_tokens <= prompt_tokens")
    return Usage(prompt - cached, cached, 0, tokens(path, where, data, "completion_tokens"))
