"""OpenAI Responses API request and response bodies (``POST /v1/responses``), as Codex
CLI and the OpenAI SDKs send them: the reading the capture proxy records them with.

- ``instructions`` (a string) is the system prompt; ``tools`` become one ``tools``
  message (exchanges.tool_definitions); ``input`` is a string (one user message) or a
  list of items: messages (``{"type": "message"}`` or the short ``{"role",
  "content"}``; roles developer and system are system), ``reasoning``,
  ``function_call`` / ``custom_tool_call`` / ``web_search_call`` / ``local_shell_call``
  and their outputs, read by items.item_parts, which reads Codex's rollouts too (they
  store these same items). Consecutive items the model wrote (reasoning,
  assistant text, tool calls) are one assistant message: one model call.
- ``compaction`` items (server-side compaction, opaque encrypted text) count as nothing
  and are kept as an empty user message marked as a compaction summary, so the request
  still lines up with the history; ``item_reference`` items likewise.
- The response's ``output`` items are one assistant message; usage ``input_tokens``
  includes the cached ones (``input_tokens_details.cached_tokens``), so
  Usage.input_tokens = input - cached and cache_read = cached, as for Codex.
"""

from __future__ import annotations

from typing import Any

from contextsim.ingest.base import FormatError, expect, token_count
from contextsim.ingest.exchanges import model_name, tool_definitions
from contextsim.model import Message, Part, Role, TextPart, Usage
from contextsim.systems.openai_api.items import CALL_ITEMS, ITEM_TYPES, item_parts

SYSTEM_ROLES = frozenset({"system", "developer"})
OPAQUE_ITEMS = frozenset({"compaction", "item_reference"})


class ResponsesDialect:
    """Reads Responses API bodies (see the module docstring); the methods of
    exchanges.Dialect."""

    name = "openai-responses"

    def request(self, path: str, where: str, data: Any) -> tuple[tuple[Message, ...], str]:
        """The messages a request body sent (tools, instructions, input) and its model."""
        expect(path, where, data, dict, "a Responses request body with 'input'")
        sent: list[Message] = []
        tools = tool_definitions(path, f"{where}.tools", data.get("tools"))
        if tools is not None:
            sent.append(tools)
        instructions = data.get("instructions")
        if isinstance(instructions, str) and instructions:
            sent.append(
                Message("system", (TextPart(instructions),), source=f"{where}.instructions")
            )
        items = data.get("input")
        if isinstance(items, str):
            sent.append(Message("user", (TextPart(items),), source=f"{where}.input"))
        elif items is not None:
            expect(path, f"{where}.input", items, list, "a string or a list of input items")
            sent.extend(messages_of(path, f"{where}.input", items))
        return tuple(sent), model_name(data)

    def response(self, path: str, where: str, data: Any) -> tuple[Message | None, str]:
        """The assistant message of a response body (its output items, its usage); None
        when it has neither (a failed response)."""
        expect(path, where, data, dict, "a Responses response body")
        output, usage = data.get("output"), data.get("usage")
        if not output and not isinstance(usage, dict):
            return None, model_name(data)
        parts: list[Part] = []
        for i, item in enumerate(output or ()):
            at = f"{where}.output[{i}]"
            expect(path, at, item, dict, "an output item object")
            if item.get("type") in ITEM_TYPES:
                parts.extend(item_parts(path, at, item))
        measured = _usage(path, f"{where}.usage", usage) if isinstance(usage, dict) else None
        return Message("assistant", tuple(parts), measured, source=where), model_name(data)


def messages_of(path: str, where: str, items: list[Any]) -> list[Message]:
    """The messages of a list of input items, the model's consecutive items joined into
    one assistant message."""
    out: list[Message] = []
    call: list[Part] = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        expect(path, at, item, dict, "an input item object")
        kind = item.get("type", "message")
        role = item.get("role")
        if kind in OPAQUE_ITEMS:
            _close(out, call, at)
            out.append(Message("user", (), compact_summary=kind == "compaction", source=at))
            continue
        if kind not in ITEM_TYPES:
            raise FormatError(path, f"{at}.type", f"unknown input item type {kind!r}")
        parts = item_parts(path, at, {**item, "type": kind})
        if kind == "reasoning" or kind in CALL_ITEMS or role == "assistant":
            call.extend(parts)
            continue
        _close(out, call, at)
        new: Role = "system" if role in SYSTEM_ROLES else "user" if kind == "message" else "tool"
        out.append(Message(new, parts, source=at))
    _close(out, call, where)
    return out


def _close(out: list[Message], call: list[Part], where: str) -> None:
    if call:
        out.append(Message("assistant", tuple(call), source=where))
        call.clear()


def _usage(path: str, where: str, data: dict[str, Any]) -> Usage:
    def count(value: Any, key: str) -> int:
        return 0 if value is None else token_count(path, f"{where}.{key}", value, "a whole number")

    details = data.get("input_tokens_details")
    cached = count(details.get("cached_tokens") if isinstance(details, dict) else None, "cached")
    total = count(data.get("input_tokens"), "input_tokens")
    cached = min(cached, total)
    return Usage(
        total - cached,
        cache_read=cached,
        output_tokens=count(data.get("output_tokens"), "output_tokens"),
    )
