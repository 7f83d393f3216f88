"""Streamed model responses (server-sent events) put back together as the response body
the same call would have answered unstreamed, so one reader serves both.

- Anthropic Messages: ``message_start`` (the message, its input usage),
  ``content_block_start`` / ``content_block_delta`` (``text_delta``,
  ``input_json_delta``, ``thinking_delta``, ``signature_delta``, ``citations_delta``) /
  ``content_block_stop``, ``message_delta`` (stop reason; usage, whose counts replace
  the earlier ones: the API reports cumulative figures), ``message_stop``, ``ping``,
  ``error``.
- OpenAI Chat Completions: ``data: {chunk}`` lines, each choice's ``delta`` adding
  content, reasoning and tool-call fragments by ``index``; usage in the last chunk when
  the request asked for it (``stream_options.include_usage``); ``data: [DONE]``.
- OpenAI Responses: the terminal event (``response.completed``, ``response.incomplete``
  or ``response.failed``) carries the whole response; ``error`` events are errors.

Only the events' JSON is read; unknown events are ignored (providers add new ones).
Units: none; bytes in, JSON values out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Event:
    """One server-sent event: its `event` name ('' when unnamed) and `data` text."""

    name: str
    data: str


def events(text: str) -> Iterator[Event]:
    """The events of an event stream (the WHATWG rules: fields ``event`` and ``data``,
    data lines joined by newlines, an event ended by a blank line, comments skipped)."""
    name, data = "", list[str]()
    for line in text.splitlines():
        if not line:
            if data:
                yield Event(name, "\n".join(data))
            name, data = "", list[str]()
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "event":
            name = value
        elif key == "data":
            data.append(value)
    if data:
        yield Event(name, "\n".join(data))


def _payloads(text: str) -> Iterator[Any]:
    for event in events(text):
        if event.data.strip() == "[DONE]":
            continue
        try:
            yield json.loads(event.data)
        except ValueError:
            continue  # a keep-alive or a provider's own line: not part of the answer


class StreamError(ValueError):
    """The stream ended in an error event; its message is the provider's."""


def anthropic_message(text: str) -> dict[str, Any]:
    """The Messages response body a stream of Anthropic events adds up to. Raises
    StreamError on an ``error`` event or a stream without ``message_start``."""
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    for data in _payloads(text):
        kind = data.get("type") if isinstance(data, dict) else None
        if kind == "error":
            raise StreamError(json.dumps(data.get("error"), ensure_ascii=False))
        if kind == "message_start" and isinstance(data.get("message"), dict):
            message = dict(data["message"])
            message["usage"] = dict(message.get("usage") or {})
        elif kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            blocks[int(data.get("index", len(blocks)))] = dict(data["content_block"])
        elif kind == "content_block_delta" and isinstance(data.get("delta"), dict):
            _add_delta(blocks, partial, int(data.get("index", 0)), data["delta"])
        elif kind == "message_delta" and message is not None:
            message.update(data.get("delta") or {})
            message["usage"].update(data.get("usage") or {})
    if message is None:
        raise StreamError("the stream ended before its message started")
    for index, pieces in partial.items():
        block = blocks.setdefault(index, {"type": "tool_use"})
        joined = "".join(pieces)
        try:
            block["input"] = json.loads(joined) if joined.strip() else {}
        except ValueError:
            block["input"] = joined  # cut short: kept as the text that came
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def _add_delta(
    blocks: dict[int, dict[str, Any]],
    partial: dict[int, list[str]],
    index: int,
    delta: dict[str, Any],
) -> None:
    block = blocks.setdefault(index, {"type": "text", "text": ""})
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + str(delta.get("text", ""))
    elif kind == "input_json_delta":
        partial.setdefault(index, []).append(str(delta.get("partial_json", "")))
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
    elif kind == "signature_delta":
        block["signature"] = block.get("signature", "") + str(delta.get("signature", ""))
    elif kind == "citations_delta" and isinstance(delta.get("citation"), dict):
        block.setdefault("citations", []).append(delta["citation"])


@dataclass(slots=True)
class _Choice:
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    role: str = "assistant"
    finish: Any = None


def chat_completion(text: str) -> dict[str, Any]:
    """The Chat Completions response body a stream of chunks adds up to (every choice;
    usage when the stream had it). Raises StreamError on an error payload or when no
    chunk came."""
    head: dict[str, Any] | None = None
    choices: dict[int, _Choice] = {}
    usage: Any = None
    for data in _payloads(text):
        if not isinstance(data, dict):
            continue
        if "error" in data and "choices" not in data:
            raise StreamError(json.dumps(data["error"], ensure_ascii=False))
        head = head or {k: data.get(k) for k in ("id", "created", "model")}
        usage = data.get("usage") or usage
        for item in data.get("choices") or ():
            if isinstance(item, dict):
                _add_chunk(choices.setdefault(int(item.get("index", 0)), _Choice()), item)
    if head is None:
        raise StreamError("the stream ended before its first chunk")
    return {
        **head,
        "object": "chat.completion",
        "choices": [_choice(i, choices[i]) for i in sorted(choices)],
        "usage": usage,
    }


def _add_chunk(choice: _Choice, item: dict[str, Any]) -> None:
    given = item.get("delta")
    delta: dict[str, Any] = given if isinstance(given, dict) else {}
    choice.role = delta.get("role") or choice.role
    choice.finish = item.get("finish_reason") or choice.finish
    if isinstance(delta.get("content"), str):
        choice.content.append(delta["content"])
    for key in ("reasoning_content", "reasoning"):
        if isinstance(delta.get(key), str):
            choice.reasoning.append(delta[key])
    for call in delta.get("tool_calls") or ():
        if not isinstance(call, dict):
            continue
        slot = choice.calls.setdefault(
            int(call.get("index", len(choice.calls))),
            {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
        )
        slot["id"] = call.get("id") or slot["id"]
        named = call.get("function")
        function: dict[str, Any] = named if isinstance(named, dict) else {}
        slot["function"]["name"] += function.get("name") or ""
        slot["function"]["arguments"] += function.get("arguments") or ""


def _choice(index: int, choice: _Choice) -> dict[str, Any]:
    message: dict[str, Any] = {"role": choice.role, "content": "".join(choice.content) or None}
    if choice.reasoning:
        message["reasoning_content"] = "".join(choice.reasoning)
    if choice.calls:
        message["tool_calls"] = [choice.calls[i] for i in sorted(choice.calls)]
    return {"index": index, "message": message, "finish_reason": choice.finish}


TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def response(text: str) -> dict[str, Any]:
    """The Responses API body a stream of events ends with (its terminal event's
    ``response``), its ``output`` filled from the ``response.output_item.done`` events
    where the terminal event leaves it empty (as ChatGPT's Codex backend does). Raises
    StreamError on an ``error`` event or a stream that never reached a terminal event."""
    last: dict[str, Any] | None = None
    items: dict[int, Any] = {}
    for data in _payloads(text):
        if not isinstance(data, dict):
            continue
        if data.get("type") == "error":
            raise StreamError(json.dumps(data.get("error") or data, ensure_ascii=False))
        if data.get("type") == "response.output_item.done" and "item" in data:
            index = data.get("output_index")
            items[index if isinstance(index, int) else len(items)] = data["item"]
        if data.get("type") in TERMINAL and isinstance(data.get("response"), dict):
            last = data["response"]
    if last is None:
        raise StreamError("the stream ended before the response was complete")
    if not last.get("output") and items:
        last = {**last, "output": [items[i] for i in sorted(items)]}
    return last
