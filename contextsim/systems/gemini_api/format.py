"""Gemini API bodies (see README.md): a request's messages and a response's message with
its usage, for the capture proxy. Raises FormatError naming the JSON path and what was
expected."""

from __future__ import annotations

import json
from collections import defaultdict, deque
from typing import Any

from contextsim.ingest.base import FormatError, expect
from contextsim.ingest.exchanges import tool_definitions
from contextsim.model import (
    ImagePart,
    Message,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

ROLES = {"user": "user", "model": "assistant"}


class GeminiDialect:
    """How the Gemini API writes a request and a response (exchanges.Dialect's request
    and response). The model is in the URL, not the body: the proxy puts it in the body
    as "model" before reading."""

    name = "gemini"

    def request(self, path: str, where: str, data: Any) -> tuple[tuple[Message, ...], str]:
        expect(path, where, data, dict, "a generateContent request body")
        contents = expect(path, f"{where}.contents", data.get("contents"), list, "a list")
        sent: list[Message] = []
        declared = _declarations(path, f"{where}.tools", data.get("tools"))
        tools = tool_definitions(path, f"{where}.tools", declared) if declared else None
        if tools is not None:
            sent.append(tools)
        system = data.get("systemInstruction")
        if system is not None:
            parts = _parts(path, f"{where}.systemInstruction", system, _Calls())
            sent.append(Message("system", parts))
        calls = _Calls()
        for i, content in enumerate(contents):
            at = f"{where}.contents[{i}]"
            expect(path, at, content, dict, "a content object")
            role = content.get("role", "user")
            if role not in ROLES:
                raise FormatError(path, f"{at}.role", f"expected user or model, got {role!r}")
            sent.append(Message(ROLES[role], _parts(path, at, content, calls)))  # type: ignore[arg-type]
        model = data.get("model")
        return tuple(sent), model if isinstance(model, str) else ""

    def response(self, path: str, where: str, data: Any) -> tuple[Message | None, str]:
        expect(path, where, data, dict, "a generateContent response body")
        model = data.get("modelVersion") or data.get("model") or ""
        candidates = data.get("candidates") or []
        expect(path, f"{where}.candidates", candidates, list, "a list")
        usage = _usage(path, f"{where}.usageMetadata", data.get("usageMetadata"))
        if not candidates and usage is None:
            return None, str(model)
        content = candidates[0].get("content") if candidates else None
        parts = _parts(path, f"{where}.candidates[0].content", content, _Calls()) if content else ()
        return Message("assistant", parts, usage), str(model)


class _Calls:
    """Ids for a conversation's function calls: Gemini gives none unless asked, and a
    response names its call only by the function's name (the oldest unanswered)."""

    def __init__(self) -> None:
        self.open: defaultdict[str, deque[str]] = defaultdict(deque)
        self.made = 0

    def call(self, name: str, given: Any) -> str:
        self.made += 1
        found = given if isinstance(given, str) and given else f"{name}#{self.made}"
        self.open[name].append(found)
        return found

    def answer(self, name: str, given: Any) -> str:
        if isinstance(given, str) and given:
            return given
        waiting = self.open[name]
        return waiting.popleft() if waiting else f"{name}#answer"


def _declarations(path: str, where: str, tools: Any) -> list[Any]:
    if tools is None:
        return []
    expect(path, where, tools, list, "a list of tools")
    found: list[Any] = []
    for i, tool in enumerate(tools):
        expect(path, f"{where}[{i}]", tool, dict, "a tool object")
        declared = tool.get("functionDeclarations", tool.get("function_declarations", []))
        expect(path, f"{where}[{i}].functionDeclarations", declared, list, "a list")
        found += declared
    return found


def _parts(path: str, where: str, content: Any, calls: _Calls) -> tuple[Part, ...]:
    expect(path, where, content, dict, "a content object with parts")
    parts = content.get("parts") or []
    expect(path, f"{where}.parts", parts, list, "a list of parts")
    out: list[Part] = []
    for i, part in enumerate(parts):
        at = f"{where}.parts[{i}]"
        expect(path, at, part, dict, "a part object")
        if isinstance(part.get("text"), str):
            text = part["text"]
            out.append(ThinkingPart(text) if part.get("thought") is True else TextPart(text))
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            name = str(call.get("name") or "")
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
            out.append(ToolCallPart(calls.call(name, call.get("id")), name, arguments))
        elif isinstance(part.get("functionResponse"), dict):
            answer = part["functionResponse"]
            name = str(answer.get("name") or "")
            text = json.dumps(answer.get("response") or {}, ensure_ascii=False)
            out.append(ToolResultPart(calls.answer(name, answer.get("id")), text))
        elif isinstance(part.get("inlineData"), dict):
            out.append(ImagePart(str(part["inlineData"].get("mimeType") or "")))
    return tuple(out)


def _usage(path: str, where: str, data: Any) -> Usage | None:
    if data is None:
        return None
    expect(path, where, data, dict, "a usageMetadata object")

    def count(key: str) -> int:
        value = data.get(key) or 0
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise FormatError(path, f"{where}.{key}", f"expected a whole number, got {value!r}")
        return value

    cached = count("cachedContentTokenCount")
    prompt = count("promptTokenCount")
    output = count("candidatesTokenCount") + count("thoughtsTokenCount")
    return Usage(max(prompt - cached, 0), cached, 0, output)


def streamed_response(text: str) -> dict[str, Any]:
    """The response a `streamGenerateContent?alt=sse` stream amounts to: its chunks'
    parts in order (adjacent text of the same kind joined), the last usage and model.
    Raises ValueError for a stream with no chunk."""
    parts: list[dict[str, Any]] = []
    last: dict[str, Any] = {}
    chunks = 0
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        chunk = json.loads(line[5:].strip())
        chunks += 1
        last = chunk
        for candidate in (chunk.get("candidates") or [])[:1]:
            for part in (candidate.get("content") or {}).get("parts") or []:
                joined = (
                    parts
                    and "text" in part
                    and "text" in parts[-1]
                    and bool(part.get("thought")) == bool(parts[-1].get("thought"))
                )
                if joined:
                    parts[-1] = {**parts[-1], "text": parts[-1]["text"] + part["text"]}
                else:
                    parts.append(dict(part))
    if not chunks:
        raise ValueError("no data in the stream")
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}}],
        "usageMetadata": last.get("usageMetadata"),
        "modelVersion": last.get("modelVersion", ""),
    }
