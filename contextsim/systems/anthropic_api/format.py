"""Anthropic Messages API: request bodies, bare message lists and logged exchanges.

Accepted, as one JSON document or JSONL (one entry per line):
- a request body ``{"model", "system", "messages": [...]}``;
- a list of messages (string content or content blocks);
- logged exchanges ``{"request": {...}, "response": {"content", "usage", ...}}``,
  rebuilt into one run (see exchanges.rebuild) with each response's usage.

Blocks: text, thinking, redacted_thinking, tool_use (and server/MCP tool uses),
tool_result (and server tool results), image and document. Anthropic usage already
reports cached tokens apart: input_tokens, cache_read_input_tokens and
cache_creation_input_tokens map one to one onto Usage.
"""

from __future__ import annotations

from typing import Any

from contextsim.ingest.base import (
    FormatError,
    Names,
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

ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system"}
CALL_BLOCKS = Names({"tool_use", "server_tool_use", "mcp_tool_use"})
RESULT_BLOCKS = Names(
    {
        "tool_result",
        "mcp_tool_result",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
    }
)
BLOCKS_EXPECTED = "text, thinking, redacted_thinking, tool_use, tool_result, image or document"

# Structural markers only Anthropic's API writes (see exchanges.features).
MARKERS = Names(
    {
        "body:system",
        "block:tool_use",
        "block:tool_result",
        "block:thinking",
        "block:redacted_thinking",
        "block:server_tool_use",
        "block:document",
        "block:source",
        "response:stop_reason",
        "usage:input_tokens",
        "usage:cache_creation_input_tokens",
        "usage:cache_read_input_tokens",
    }
)
# Markers of OpenAI Chat Completions: a file with them is not Anthropic's.
OPENAI_MARKERS = Names(
    {
        "key:tool_calls",
        "key:tool_call_id",
        "key:function_call",
        "role:tool",
        "role:function",
        "role:developer",
        "block:image_url",
        "response:choices",
        "usage:prompt_tokens",
    }
)


class AnthropicImporter:
    """Anthropic Messages logs -> one run (see the module docstring)."""

    name = "anthropic"
    label = "Anthropic Messages request bodies, message lists and request/response logs"

    def sniff(self, source: Source) -> bool:
        """Claim only chat-shaped entries with an Anthropic marker and no OpenAI one."""
        found = features(source)
        return found is not None and bool(found & MARKERS) and not found & OPENAI_MARKERS

    def parse(self, source: Source) -> ParsedFile:
        return parse_chat(source, self)

    def message(self, path: str, where: str, data: Any) -> Message:
        """One message ``{"role", "content"}``; content a string or a list of blocks."""
        expect(path, where, data, dict, "a message object")
        role = data.get("role")
        if role not in ROLES:
            found = "nothing" if role is None else repr(role)
            raise FormatError(path, f"{where}.role", f"expected user or assistant, found {found}")
        parts = _content(path, f"{where}.content", data.get("content"))
        return Message(ROLES[role], parts, source=where)

    def request(self, path: str, where: str, data: Any) -> tuple[tuple[Message, ...], str]:
        """The system prompt (as a system message) and the messages of a request body."""
        expect(path, where, data, dict, "a request body with 'messages'")
        items = expect(path, f"{where}.messages", data.get("messages"), list, "a list")
        system = data.get("system")
        tools = tool_definitions(path, f"{where}.tools", data.get("tools"))
        sent = [] if tools is None else [tools]
        sent += [] if system is None else [_system(path, f"{where}.system", system)]
        sent += [self.message(path, f"{where}.messages[{i}]", m) for i, m in enumerate(items)]
        return tuple(sent), model_name(data)

    def response(self, path: str, where: str, data: Any) -> tuple[Message | None, str]:
        """The assistant message of a response, with its usage; None for an error."""
        expect(path, where, data, dict, "a response object")
        content, usage = data.get("content"), data.get("usage")
        if content is None and usage is None:
            return None, model_name(data)
        parts = () if content is None else _content(path, f"{where}.content", content)
        measured = None if usage is None else _usage(path, f"{where}.usage", usage)
        return Message("assistant", parts, measured, source=where), model_name(data)


def _system(path: str, where: str, value: Any) -> Message:
    # The system prompt is a string or a list of text blocks (with cache_control).
    return Message("system", _content(path, where, value), source=where)


def _content(path: str, where: str, value: Any) -> tuple[Part, ...]:
    if isinstance(value, str):
        return (TextPart(value),) if value else ()
    expect(path, where, value, list, "a string or a list of content blocks")
    return tuple(_block(path, f"{where}[{i}]", b) for i, b in enumerate(value))


def _block(path: str, where: str, data: Any) -> Part:
    expect(path, where, data, dict, "a content block object")
    kind = data.get("type")

    def text(key: str) -> str:
        return str(expect(path, f"{where}.{key}", data.get(key), str, "a string"))

    if kind == "text":
        return TextPart(text("text"))
    if kind == "thinking":
        return ThinkingPart(text("thinking"))
    if kind == "redacted_thinking":
        # Encrypted reasoning: opaque bytes whose length says nothing about tokens.
        return ThinkingPart("")
    if kind in CALL_BLOCKS:
        return ToolCallPart(text("id"), text("name"), arguments_text(data.get("input")))
    if kind in RESULT_BLOCKS:
        return ToolResultPart(
            text("tool_use_id"), text_of(data.get("content")), data.get("is_error") is True
        )
    if kind in ("image", "document"):
        return _media(data.get("source"))
    raise FormatError(
        path, f"{where}.type", f"unknown content block type {kind!r}; expected {BLOCKS_EXPECTED}"
    )


def _media(source: Any) -> Part:
    """An image or document; a plain-text document is kept as its text."""
    if not isinstance(source, dict):
        return ImagePart()
    if source.get("type") == "text" and isinstance(source.get("data"), str):
        return TextPart(source["data"])
    media_type = source.get("media_type")
    return ImagePart(media_type if isinstance(media_type, str) else "")


def _usage(path: str, where: str, data: Any) -> Usage:
    expect(path, where, data, dict, "a usage object")
    return Usage(
        input_tokens=tokens(path, where, data, "input_tokens", required=True),
        cache_read=tokens(path, where, data, "cache_read_input_tokens"),
        cache_write=tokens(path, where, data, "cache_creation_input_tokens"),
        output_tokens=tokens(path, where, data, "output_tokens"),
    )
