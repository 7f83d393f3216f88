"""Responses API items: the message, reasoning, tool call and tool output items a
Responses request's `input` and its response's `output` hold. Codex CLI's rollouts store
the same items (`response_item` records), so its importer reads them here too.
"""

from __future__ import annotations

from typing import Any

from contextsim.counting.redaction import encrypted_length
from contextsim.ingest.base import Names, arguments_text, expect, text_of
from contextsim.model import ImagePart, Part, TextPart, ThinkingPart, ToolCallPart, ToolResultPart


def _item_string(path: str, where: str, data: dict[str, Any], key: str) -> str:
    """`data[key]` as a string; "" when absent; FormatError when it is not a string."""
    value = data.get(key)
    return "" if value is None else str(expect(path, where, value, str, f"{key!r} string"))


CALL_ITEMS = Names({"function_call", "custom_tool_call", "web_search_call", "local_shell_call"})


OUTPUT_ITEMS = Names({"function_call_output", "custom_tool_call_output"})


ITEM_TYPES = Names(CALL_ITEMS | OUTPUT_ITEMS | {"message", "reasoning"})


def item_parts(path: str, where: str, item: dict[str, Any]) -> tuple[Part, ...]:
    """The parts of one response item (message, reasoning, tool call or output)."""
    kind = item.get("type")
    if kind == "message":
        return _content_parts(item.get("content"))
    if kind == "reasoning":
        opaque = encrypted_length(item.get("encrypted_content"))
        return (ThinkingPart(text_of(item.get("summary")), opaque_chars=opaque),)
    if kind in OUTPUT_ITEMS:
        text, failed = _output(item.get("output"))
        return (ToolResultPart(_item_string(path, where, item, "call_id"), text, failed),)
    call_id = _item_string(path, where, item, "call_id") or _item_string(path, where, item, "id")
    if kind == "function_call":
        name, arguments = _item_string(path, where, item, "name"), item.get("arguments")
    elif kind == "custom_tool_call":
        name, arguments = _item_string(path, where, item, "name"), item.get("input")
    else:  # a web search or a local shell call: its action is what the model asked for
        name, arguments = str(kind).removesuffix("_call"), item.get("action")
    # The provider runs a web search inside the response: no output item answers it.
    server_side = kind == "web_search_call"
    return (
        ToolCallPart(call_id or f"{name}@{where}", name, arguments_text(arguments), server_side),
    )


def _is_image(block: Any) -> bool:
    return isinstance(block, dict) and "image" in str(block.get("type"))


def _content_parts(content: Any) -> tuple[Part, ...]:
    if not isinstance(content, list):
        return (TextPart(text_of(content)),)
    # An image's data (a base64 URL) is not text the model reads as text.
    return tuple(ImagePart() if _is_image(b) else TextPart(text_of([b])) for b in content)


def _output(value: Any) -> tuple[str, bool]:
    """Text of a tool output and whether it failed. The output is a string, an object
    with `content` / `output` (and maybe `success`), or a list of content items."""
    failed = False
    if isinstance(value, dict):
        failed = value.get("success") is False
        key = next((k for k in ("content", "output", "content_items") if k in value), None)
        value = value if key is None else value[key]
    if isinstance(value, list):
        value = [b for b in value if not _is_image(b)]
    return text_of(value), failed
