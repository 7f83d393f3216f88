"""Gemini CLI chat recordings (`~/.gemini/tmp/<project hash>/chats/`).

Three layouts, one record shape:

- a JSON document ``{sessionId, projectHash, startTime, lastUpdated, messages: [...]}``
  (older files have no ``kind``; newer ones say ``kind: "main"``);
- JSONL: a header line with those keys but ``messages``, then one message record per
  line and ``{"$set": {...}}`` lines that update the header (skipped).

A message record is ``{id, timestamp, type, content, ...}`` with type ``user``,
``gemini`` (a model response), or ``info`` / ``error`` / ``warning`` (the UI's notes,
never sent: skipped and counted in a warning). A response is recorded more than once
under the same ``id`` (without its tool calls, then with them and their results): the
last record of an id is the response, in the place of its first.

How the run is built:

- ``user``: a user message of ``content`` (text parts, or a string).
- ``gemini``: an assistant message of ``content`` and one ToolCallPart per
  ``toolCalls`` entry (its ``args`` as JSON), then one tool message holding the calls'
  ``result`` (``functionResponse.response``: its ``output``, else its JSON).
- ``thoughts`` (subject and description: a summary) become one ThinkingPart sized at
  the response's ``tokens.thoughts`` and sent only within its turn: the model's
  thoughts travel back with its function calls (thought signatures) until the user
  speaks again. The real sessions show it: a request after a response with 10,849
  thought tokens grows by them plus what was logged.
- ``tokens`` is the response's usage: ``input`` includes ``cached``, so
  Usage.input_tokens = input - cached and cache_read = cached; output = ``output`` +
  ``thoughts`` (both billed as output); ``model`` is per response (a session may switch).
- The window: the files state none; Gemini CLI's token limit for Gemini models is
  1,048,576 (its tokenLimits), said as the window's source.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import pairwise
from typing import Any

from contextsim.ingest.base import (
    Document,
    FormatError,
    Lines,
    ParsedFile,
    Record,
    Source,
    arguments_text,
    expect,
    parse_time,
    text_of,
    token_count,
)
from contextsim.ingest.exchanges import title_of
from contextsim.model import (
    Message,
    Part,
    Rejection,
    Run,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    refused_for_size,
)

HEADER_KEYS = frozenset({"sessionId", "projectHash"})
SENT_TYPES = frozenset({"user", "gemini"})
UI_TYPES = frozenset({"info", "error", "warning"})
WINDOW = 1_048_576
"""Gemini CLI's token limit for Gemini models (tokenLimits: 2**20)."""


class GeminiCliImporter:
    name = "gemini-cli"
    label = "Gemini CLI chat recording (JSON or JSONL)"

    def sniff(self, source: Source) -> bool:
        """A document with a session header and a `messages` list of typed records, or
        JSONL whose first record is such a header."""
        if isinstance(source, Document):
            data = source.data
            return (
                isinstance(data, dict)
                and data.keys() >= HEADER_KEYS
                and isinstance(data.get("messages"), list)
            )
        sample = [r.data for r in source.sample]
        return bool(sample) and isinstance(sample[0], dict) and sample[0].keys() >= HEADER_KEYS

    def parse(self, source: Source) -> ParsedFile:
        """One run per file. Raises FormatError naming the record of a structurally
        wrong message; UI records and `$set` lines are skipped."""
        path = source.path
        if isinstance(source, Document):
            header = expect(path, "$", source.data, dict, "a session object")
            listed = expect(path, "$.messages", header.get("messages"), list, "a list")
            records = [(f"$.messages[{i}]", r) for i, r in enumerate(listed)]
            own: tuple[str, ...] = tuple(source.warnings)
        else:
            records, header = [], {}
            for record in source:
                if record.line == 1 and isinstance(record.data, dict):
                    header = record.data
                    continue
                records.append((f"line {record.line}", record.data))
            own = tuple(source.warnings) if isinstance(source, Lines) else ()
        return _Builder(path).build(header, records, own)


def _refused(text: str) -> bool:
    """Whether an error record is a request the API refused (Gemini CLI writes its API
    errors as "[API Error: ...]"), not a tool's or the UI's."""
    return "api error" in text.lower() or refused_for_size(text)


class _Builder:
    def __init__(self, path: str) -> None:
        self.path = path
        self.skipped: Counter[str] = Counter()
        self.thought_tokens = 0  # of the response being read

    def build(
        self, header: dict[str, Any], records: list[tuple[str, Any]], own: tuple[str, ...]
    ) -> ParsedFile:
        latest: dict[str, tuple[str, dict[str, Any]]] = {}
        order: list[str] = []
        errors: list[tuple[int, dict[str, Any]]] = []  # (records before it, the record)
        for n, (where, data) in enumerate(records):
            expect(self.path, where, data, dict, "a message record")
            if "$set" in data:
                continue
            kind = data.get("type")
            if not isinstance(kind, str):
                self.skipped[f"record type {str(kind)[:40]!r}"] += 1
                continue
            if kind in UI_TYPES:
                self.skipped[f"{kind} record"] += 1
                if kind == "error":
                    errors.append((len(order), data))
                continue
            if kind not in SENT_TYPES:
                self.skipped[f"record type {str(kind)[:40]!r}"] += 1
                continue
            key = data.get("id")
            key = key if isinstance(key, str) and key else f"#{n}"
            if key not in latest:
                order.append(key)
            latest[key] = (where, data)
        messages: list[Message] = []
        models: Counter[str] = Counter()
        before: list[int] = []  # messages made from the records before each
        for key in order:
            before.append(len(messages))
            where, data = latest[key]
            messages.extend(self._messages(where, data, models))
        rejections = tuple(
            Rejection(
                before[k] if k < len(before) else len(messages),
                reason[:300],
                refused_for_size(reason),
                parse_time(data.get("timestamp")),
            )
            for k, data in errors
            if _refused(reason := text_of(data.get("content")))
        )
        session = header.get("sessionId")
        session = session if isinstance(session, str) else ""
        # Gemini CLI names the project folder only by a hash of its path.
        project = header.get("projectHash")
        project = f"project {project[:12]}" if isinstance(project, str) and project else ""
        run = Run(
            title=title_of(messages, f"Gemini CLI session {session}".strip()),
            messages=tuple(messages),
            format="gemini-cli",
            model=models.most_common(1)[0][0] if models else "",
            session_id=session,
            context_window=WINDOW,
            window_source="Gemini CLI's token limit for Gemini models (1,048,576)",
            project=project,
            rejections=rejections,
        )
        warnings = [
            f"{self.path}: skipped {n} x {what}" for what, n in sorted(self.skipped.items())
        ]
        unexplained = sum(
            1
            for a, b in pairwise(messages)
            if a.role == b.role == "assistant" and a.usage is not None and b.usage is not None
        )
        if unexplained:
            warnings.append(
                f"{self.path}: {unexplained} response(s) follow another with nothing recorded "
                "between them: what was sent between them (tool calls and their results) is "
                "not in the file, and the fit carries it as unlogged"
            )
        if len(models) > 1:
            warnings.append(
                f"{self.path}: responses of {', '.join(models)}; each is priced at its own"
            )
        return ParsedFile(GeminiCliImporter.name, (run,), (*own, *warnings))

    def _messages(self, where: str, data: dict[str, Any], models: Counter[str]) -> list[Message]:
        time = parse_time(data.get("timestamp"))
        text = text_of(data.get("content"))
        if data.get("type") == "user":
            return [Message("user", (TextPart(text),), source=where, time=time)]
        model = data.get("model")
        model = model[:200] if isinstance(model, str) else ""
        if model:
            models[model] += 1
        calls = data.get("toolCalls") or []
        expect(self.path, f"{where}.toolCalls", calls, list, "a list")
        usage = self._usage(f"{where}.tokens", data.get("tokens"), model)
        parts: list[Part] = []
        thoughts = data.get("thoughts")
        if isinstance(thoughts, list) and thoughts:
            summary = "\n\n".join(_thought(t) for t in thoughts)
            sent = self.thought_tokens
            parts.append(ThinkingPart(summary, sent_tokens=sent, turn_only=True))
        if text:
            parts.append(TextPart(text))
        results: list[Part] = []
        for i, call in enumerate(calls):
            at = f"{where}.toolCalls[{i}]"
            expect(self.path, at, call, dict, "a tool call object")
            call_id = call.get("id")
            call_id = call_id if isinstance(call_id, str) and call_id else f"{where}#{i}"
            name = call.get("name")
            name = name if isinstance(name, str) else ""
            parts.append(ToolCallPart(call_id, name, arguments_text(call.get("args"))))
            output, failed = _result(call.get("result"))
            failed = failed or call.get("status") == "error"
            results.append(ToolResultPart(call_id, output, failed))
        out = [Message("assistant", tuple(parts), usage, source=where, time=time)]
        if results:
            out.append(Message("tool", tuple(results), source=where, time=time))
        return out

    def _usage(self, where: str, tokens: Any, model: str) -> Usage | None:
        self.thought_tokens = 0
        if tokens is None:
            return None
        expect(self.path, where, tokens, dict, "a tokens object")

        def count(key: str) -> int:
            return token_count(self.path, f"{where}.{key}", tokens.get(key), "a whole number")

        given, cached = count("input"), count("cached")
        if cached > given:
            raise FormatError(self.path, f"{where}.cached", "expected at most 'input' tokens")
        self.thought_tokens = count("thoughts")
        output = count("output") + self.thought_tokens
        return Usage(given - cached, cache_read=cached, output_tokens=output, model=model)


def _thought(value: Any) -> str:
    if not isinstance(value, dict):
        return text_of(value)
    subject, description = value.get("subject"), value.get("description")
    return "\n".join(s for s in (subject, description) if isinstance(s, str) and s)


def _result(value: Any) -> tuple[str, bool]:
    """The text the model was sent for a call's `result` (a list of parts holding a
    functionResponse), and whether it is an error."""
    if not isinstance(value, list):
        return text_of(value), False
    pieces, failed = [], False
    for part in value:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(response, dict):
            body = response.get("response")
            if isinstance(body, dict) and "error" in body and "output" not in body:
                failed = True
            if isinstance(body, dict) and isinstance(body.get("output"), str):
                pieces.append(body["output"])
            else:
                pieces.append(json.dumps(body, ensure_ascii=False))
        else:
            pieces.append(text_of(part))
    return "\n".join(pieces), failed


__all__ = ["GeminiCliImporter", "Record"]
