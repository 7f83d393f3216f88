"""OpenHands event streams: one JSON document, a list of events.

Each event has an ``id``, a ``source`` (``user``, ``agent``, ``environment``) and either
an ``action`` (with ``args``) or an ``observation`` (with ``content``, ``extras`` and the
``cause``: the id of the action it answers). An action the model chose through function
calling carries ``tool_call_metadata``: the tool's name, the call id and the whole
``model_response`` (Chat Completions shape, with ``usage``); the observation answering
it carries the same metadata.

How the run is built:

- A user ``message`` action is a user message (its ``image_urls`` become images).
- An agent action with ``tool_call_metadata`` is a model call: the assistant message is
  the response's first choice (text and every tool call), with the response's usage.
  One response may drive several actions; it is one message, made at its first action.
  Without ``model_response`` the message is the action's ``thought`` plus one call.
- An agent ``message`` action without metadata is a plain assistant reply.
- An observation with ``tool_call_metadata`` is the result of that call. Its text is
  ``extras.formatted_output_and_error`` when present (the short report the model was
  sent; the diff in ``content`` is for the UI), else ``content``. The usage of the real
  stream confirms it: the request after a file creation grew by the response's output
  tokens plus a few dozen, not by the size of the diff.
- Other events (state changes, bookkeeping) are not sent to the model: skipped and
  counted in one warning.

The stream holds neither the system prompt nor the tool definitions, so a measured
context exceeds the rebuilt history (in the real stream by about 3,400 tokens).

Usage: ``prompt_tokens`` include the cache reads and the cache writes, which Claude
models report as ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` (in the
real stream 3,486 = 4 + 3,482 written, then 4,646 = 6 + 3,482 read + 1,158 written);
without those keys the reads are ``prompt_tokens_details.cached_tokens``.
Usage.input_tokens is what remains, so Usage.context equals prompt_tokens.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from contextsim.ingest.base import (
    Document,
    FormatError,
    ParsedFile,
    Source,
    arguments_text,
    expect,
    parse_time,
    text_of,
    without_unsent_tail,
)
from contextsim.ingest.exchanges import model_name, title_of, tokens
from contextsim.model import (
    ImagePart,
    Message,
    Part,
    Role,
    Run,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from contextsim.systems.openai_api.format import OpenAIImporter

SNIFF_EVENTS = 50
"""How many events detection looks at."""
EVENT_KEYS = frozenset({"action", "observation"})
ALREADY_SEEN = Message("assistant", ())
"""What an action whose model response is already a message contributes: nothing."""


class OpenHandsImporter:
    """OpenHands event streams (see the module docstring)."""

    name = "openhands"
    label = "OpenHands event stream (JSON list of events)"

    def sniff(self, source: Source) -> bool:
        """True for a JSON list whose first events all have an ``id``, a ``source`` and
        an ``action`` or an ``observation``; chat logs have none of these keys."""
        if not isinstance(source, Document) or not isinstance(source.data, list):
            return False
        sample = source.data[:SNIFF_EVENTS]
        return bool(sample) and all(_is_event(e) for e in sample)

    def parse(self, source: Source) -> ParsedFile:
        """One run per stream. Raises FormatError naming the JSON path of a wrong value."""
        path = source.path
        if not isinstance(source, Document):
            raise FormatError(path, "line 1", "expected one JSON document (a list of events)")
        events = expect(path, "$", source.data, list, "a list of OpenHands events")
        if not events:
            raise FormatError(path, "$", "expected at least one event, found an empty list")
        builder = _Builder(path)
        for i, event in enumerate(events):
            builder.add(f"$[{i}]", event)
        messages = builder.messages
        if builder.finished:
            messages = without_unsent_tail(messages)  # after finish, nothing was sent
        run = Run(title_of(messages), tuple(messages), self.name, builder.model)
        return ParsedFile(self.name, (run,), builder.warnings())


def _is_event(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and {"id", "source"} <= data.keys()
        and bool(EVENT_KEYS & data.keys())
    )


class _Builder:
    """Turns events, in stream order, into the messages of one run."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.messages: list[Message] = []
        self.model = ""
        self.responses: set[str] = set()  # model responses already made into messages
        self.skipped: Counter[str] = Counter()
        self.finished = False  # the agent took its finish action

    def add(self, where: str, event: Any) -> None:
        """Append the message `event` contributes, if any; count it as skipped if none."""
        path = self.path
        expect(path, where, event, dict, "an event object")
        kind = "action" if "action" in event else "observation"
        if kind not in event:
            raise FormatError(path, where, "expected an event with 'action' or 'observation'")
        name = expect(path, f"{where}.{kind}", event[kind], str, f"the {kind}'s type string")
        expect(path, f"{where}.source", event.get("source"), str, "the event's source string")
        meta = event.get("tool_call_metadata")
        if meta is not None:
            expect(path, f"{where}.tool_call_metadata", meta, dict, "an object")
        if kind == "action" and name == "finish" and event.get("source") == "agent":
            self.finished = True
        message = self._message(where, event, kind, meta)
        if message is None:
            self.skipped[f"{kind} {name}"] += 1
        elif message is not ALREADY_SEEN:
            self.messages.append(replace(message, time=parse_time(event.get("timestamp"))))

    def _message(
        self, where: str, event: dict[str, Any], kind: str, meta: dict[str, Any] | None
    ) -> Message | None:
        """What the model saw of `event`: None when it saw nothing, ALREADY_SEEN when an
        earlier event already holds it."""
        source = event["source"]
        if kind == "observation":
            return None if meta is None else _result(self.path, where, event, meta)
        if meta is not None:
            return self._response(where, event, meta) if source == "agent" else None
        if event["action"] == "message" and source in ("user", "agent"):
            return _said(self.path, where, event, "user" if source == "user" else "assistant")
        return None

    def _response(self, where: str, event: dict[str, Any], meta: dict[str, Any]) -> Message:
        """The model call behind an action; ALREADY_SEEN when an earlier action made it."""
        path, inner = self.path, f"{where}.tool_call_metadata"
        response = meta.get("model_response")
        if response is None:
            call_id = _string(path, inner, meta, "tool_call_id")
            if call_id in self.responses:
                return ALREADY_SEEN
            self.responses.add(call_id)
            return _from_action(path, where, event, meta)
        response = expect(path, f"{inner}.model_response", response, dict, "a response object")
        key = str(response.get("id") or where)
        if key in self.responses:
            return ALREADY_SEEN
        self.responses.add(key)
        self.model = model_name(response) or self.model
        return _reply(path, f"{inner}.model_response", response)

    def warnings(self) -> tuple[str, ...]:
        if not self.skipped:
            return ()
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(self.skipped.items()))
        total = sum(self.skipped.values())
        return (f"{self.path}: skipped {total} event(s) the model was not sent: {kinds}",)


def _string(path: str, where: str, data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    return "" if value is None else str(expect(path, f"{where}.{key}", value, str, "a string"))


def _args(path: str, where: str, event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    return {} if args is None else dict(expect(path, f"{where}.args", args, dict, "an object"))


def _said(path: str, where: str, event: dict[str, Any], role: Role) -> Message:
    """A message action: ``args.content`` (else the event's ``message``) and images."""
    args = _args(path, where, event)
    text = args["content"] if "content" in args else event.get("message")
    text = expect(path, f"{where}.args.content", text or "", str, "the message text")
    images = args.get("image_urls") or []
    expect(path, f"{where}.args.image_urls", images, list, "a list of image URLs")
    parts: list[Part] = [TextPart(text)] if text else []
    parts += [ImagePart(_media_type(u)) for u in images]
    return Message(role, tuple(parts), source=where)


def _media_type(url: Any) -> str:
    if isinstance(url, str) and url.startswith("data:"):
        return url[5:].split(";")[0].split(",")[0]
    return ""


def _reply(path: str, where: str, response: dict[str, Any]) -> Message:
    """The first choice of a model response, with the response's usage."""
    choices = expect(path, f"{where}.choices", response.get("choices"), list, "a list of choices")
    if not choices:
        raise FormatError(path, f"{where}.choices", "expected at least one choice, found none")
    first = expect(path, f"{where}.choices[0]", choices[0], dict, "a choice object")
    body = expect(path, f"{where}.choices[0].message", first.get("message"), dict, "a message")
    body = {**{k: v for k, v in body.items() if v is not None}, "role": "assistant"}
    message = OpenAIImporter().message(path, f"{where}.choices[0].message", body)
    usage = response.get("usage")
    measured = None if usage is None else _usage(path, f"{where}.usage", usage)
    return replace(message, usage=measured, source=where)


def _from_action(path: str, where: str, event: dict[str, Any], meta: dict[str, Any]) -> Message:
    """A model call known only from its action: the thought and one call of the tool."""
    inner = f"{where}.tool_call_metadata"
    args = _args(path, where, event)
    thought = args.pop("thought", "")
    thought = expect(path, f"{where}.args.thought", thought or "", str, "a string")
    call = ToolCallPart(
        _string(path, inner, meta, "tool_call_id"),
        _string(path, inner, meta, "function_name") or str(event["action"]),
        arguments_text(args),
    )
    parts: tuple[Part, ...] = (TextPart(thought), call) if thought else (call,)
    return Message("assistant", parts, source=where)


def _result(path: str, where: str, event: dict[str, Any], meta: dict[str, Any]) -> Message:
    """The result of the call named by the observation's metadata."""
    call_id = _string(path, f"{where}.tool_call_metadata", meta, "tool_call_id")
    extras = event.get("extras")
    report = extras.get("formatted_output_and_error") if isinstance(extras, dict) else None
    text = report if isinstance(report, str) else text_of(event.get("content"))
    return Message("tool", (ToolResultPart(call_id, text),), source=where)


def _usage(path: str, where: str, data: Any) -> Usage:
    """Chat Completions usage -> Usage, with input = prompt - cache reads - writes."""
    expect(path, where, data, dict, "a usage object")
    prompt = tokens(path, where, data, "prompt_tokens", required=True)
    if "cache_read_input_tokens" in data:
        read = tokens(path, where, data, "cache_read_input_tokens")
    else:
        details = data.get("prompt_tokens_details")
        inner = f"{where}.prompt_tokens_details"
        read = tokens(path, inner, details, "cached_tokens") if isinstance(details, dict) else 0
    write = tokens(path, where, data, "cache_creation_input_tokens")
    if read + write > prompt:
        raise FormatError(
            path, where, "expected cache read + cache creation tokens <= prompt_tokens"
        )
    return Usage(prompt - read - write, read, write, tokens(path, where, data, "completion_tokens"))
