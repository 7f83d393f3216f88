"""What the chat-API importers share: entry shapes, detection features, and rebuilding
one run from logged requests.

A chat-API log is either a list of messages (one conversation) or a list of
exchanges: request bodies, optionally paired with the response they got
(``{"request": {...}, "response": {...}}``), as one JSON document or as JSONL.
The OpenAI and Anthropic importers differ only in how they read one message, one
request body and one response: their `Dialect`.

Each request of an agent normally repeats the previous request, the response to it
and a few new messages. `rebuild` turns the exchanges back into one run in which every
response carries the usage measured for the request that produced it.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, islice
from typing import Any, Protocol

from contextsim.ingest.base import (
    FormatError,
    Lines,
    Names,
    ParsedFile,
    Source,
    expect,
    token_count,
)
from contextsim.model import (
    Message,
    Part,
    Run,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolSpecPart,
)

TITLE_CHARS = 80
SNIFF_ENTRIES = 50
"""How many entries of a JSON array detection looks at (JSONL: the base sample)."""

# Keys of the records of other formats: native, Claude Code, Codex.
FOREIGN_KEYS = Names({"contextsim", "sessionId", "payload"})

ENTRY_EXPECTED = (
    "expected a chat message (with 'role'), a request body (with 'messages') "
    "or a request/response pair (with 'request')"
)


class Dialect(Protocol):
    """How one chat API writes messages, request bodies and responses. Every method
    raises FormatError(path, a JSON path under `where`, "expected ...") on bad input."""

    name: str

    def message(self, path: str, where: str, data: Any) -> Message: ...

    def request(self, path: str, where: str, data: Any) -> tuple[tuple[Message, ...], str]:
        """The messages a request body sent, and its model ('' when absent)."""
        ...

    def response(self, path: str, where: str, data: Any) -> tuple[Message | None, str]:
        """The assistant message a response produced (usage attached), and its model.
        None when the response holds neither a message nor usage (e.g. an error)."""
        ...


@dataclass(frozen=True, slots=True)
class Exchange:
    """One logged model call: the messages sent and the reply (None if not logged)."""

    where: str
    request: tuple[Message, ...]
    response: Message | None = None
    model: str = ""
    sent: float | None = None
    """When the call was made (seconds since the epoch), if the log says: the time of
    the request's messages that are new in it."""
    answered: float | None = None
    """When its answer was complete, if the log says: the response's time (these logs
    keep no first byte, so the response's delay is the whole call)."""


def tokens(path: str, where: str, data: dict[str, Any], key: str, required: bool = False) -> int:
    """The token count `data[key]`: a whole number >= 0; absent or null counts 0 unless
    `required`."""
    value = data.get(key)
    if value is None and not required:
        return 0
    if value is None:  # required
        expect(path, f"{where}.{key}", value, int, "a whole number of tokens")
    return token_count(path, f"{where}.{key}", value, "a whole number of tokens")


def tool_definitions(path: str, where: str, tools: Any) -> Message | None:
    """The `tools` a request body offered, as one system message of ToolSpecParts (the
    provider counts them as part of the prompt), or None when it offered none."""
    if tools is None:
        return None
    expect(path, where, tools, list, "a list of tool definitions")
    parts = []
    for i, tool in enumerate(tools):
        expect(path, f"{where}[{i}]", tool, dict, "a tool definition object")
        function = tool.get("function")
        name = tool.get("name") or (function.get("name") if isinstance(function, dict) else "")
        parts.append(ToolSpecPart(str(name or tool.get("type") or f"tool {i}"), _json(tool)))
    return Message("system", tuple(parts), source=where) if parts else None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def model_name(data: dict[str, Any]) -> str:
    model = data.get("model")
    return model if isinstance(model, str) else ""


def title_of(messages: Sequence[Message], untitled: str = "untitled run") -> str:
    """The first real user text, on one line, shortened to about TITLE_CHARS;
    `untitled` when there is none."""
    for message in messages:
        text = " ".join(message.text.split())
        if message.is_user_turn and text:
            return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"
    return untitled


def entry_kind(data: Any) -> str | None:
    """'message', 'pair', 'body' or None for anything else (including other formats)."""
    if not isinstance(data, dict) or FOREIGN_KEYS & data.keys():
        return None
    if "type" in data and "message" in data:  # a Claude Code record
        return None
    if "request" in data or "response" in data:
        return "pair"
    if isinstance(data.get("messages"), list):
        return "body"
    return "message" if "role" in data else None


def entries(source: Source) -> Iterator[tuple[str, Any]]:
    """Each top-level entry with the root of its JSON path (`$[3]`, `line 4, $`)."""
    if isinstance(source, Lines):
        for record in source:
            yield f"line {record.line}, $", record.data
    elif isinstance(source.data, list):
        for i, item in enumerate(source.data):
            yield f"$[{i}]", item
    else:
        yield "$", source.data


def features(source: Source) -> set[str] | None:
    """Structural markers of the sampled entries, for detection; None unless every
    sampled entry is a chat message, request body or pair.

    Markers: ``body:<key>``, ``role:<role>``, ``key:<message key>``, ``block:<type>``,
    ``block:source`` (a block with a `source`), ``response:<key>``, ``usage:<key>``.
    Only keys and types are looked at, never text, so content cannot fool detection.
    """
    if isinstance(source, Lines):
        sample = [record.data for record in source.sample]  # never read past the sample
    else:
        sample = [data for _, data in islice(entries(source), SNIFF_ENTRIES)]
    if not sample or any(entry_kind(data) is None for data in sample):
        return None
    found: set[str] = set()
    for data in sample:
        if entry_kind(data) == "message":
            _message_features(data, found)
            continue
        request = data.get("request") if entry_kind(data) == "pair" else data
        if isinstance(request, dict):
            found.update(f"body:{key}" for key in request)
            messages = request.get("messages")
            for message in messages if isinstance(messages, list) else ():
                if isinstance(message, dict) and "role" not in message:
                    return None  # not a chat message: e.g. a saved LangChain state
                _message_features(message, found)
        response = data.get("response")
        if isinstance(response, dict):
            found.update(f"response:{key}" for key in response)
            usage = response.get("usage")
            if isinstance(usage, dict):
                found.update(f"usage:{key}" for key in usage)
    return found


def _message_features(message: Any, found: set[str]) -> None:
    if not isinstance(message, dict):
        return
    found.add(f"role:{message.get('role')}")
    found.update(f"key:{key}" for key in message)
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict):
            found.add(f"block:{block.get('type')}")
            if "source" in block:
                found.add("block:source")


def parse_chat(source: Source, dialect: Dialect) -> ParsedFile:
    """One run from a list of messages or a list of exchanges (JSON or JSONL).

    The first entry decides which; the others must be of the same kind. Exchanges are
    rebuilt as they are read, so a JSONL log's requests are never all held at once.
    """
    path, stream = source.path, entries(source)
    first = next(stream, None)
    if first is None:
        raise FormatError(path, "$", "expected messages or exchanges, found an empty array")
    if entry_kind(first[1]) is None:
        raise FormatError(path, first[0], ENTRY_EXPECTED)
    warnings: list[str] = []
    if entry_kind(first[1]) == "message":
        messages = tuple(dialect.message(path, w, d) for w, d in chain([first], stream))
        run = Run(title_of(messages), messages, dialect.name)
    else:
        exchanges = (_exchange(path, w, d, dialect) for w, d in chain([first], stream))
        kept, model = rebuild(path, exchanges, warnings)
        run = Run(title_of(kept), kept, dialect.name, model)
    read = source.warnings if isinstance(source, Lines) else []
    return ParsedFile(dialect.name, (run,), (*read, *warnings))


def _exchange(path: str, where: str, data: Any, dialect: Dialect) -> Exchange:
    """A request body alone, or a ``{"request", "response"}`` pair."""
    kind = entry_kind(data)
    if kind not in ("pair", "body"):
        raise FormatError(path, where, "expected a request/response pair like the first entry")
    if kind == "body":
        sent, model = dialect.request(path, where, data)
        return Exchange(where, sent, None, model)
    request = expect(path, f"{where}.request", data.get("request"), dict, "a request object")
    sent, model = dialect.request(path, f"{where}.request", request)
    reply, served = None, ""
    if data.get("response") is not None:
        reply, served = dialect.response(path, f"{where}.response", data["response"])
    return Exchange(where, sent, reply, model or served)


@dataclass(slots=True)
class _History:
    """One line of conversation the requests followed (several when an agent forks)."""

    messages: list[Message]
    keys: list[Hashable]
    latest: int = 0
    model: str = ""
    edited: list[str] = field(default_factory=list)


def rebuild(
    path: str, exchanges: Iterable[Exchange], warnings: list[str]
) -> tuple[tuple[Message, ...], str]:
    """The messages of one run and its model, from exchanges in the order they were made.

    A request that repeats a history and adds messages extends it. One that changed
    earlier messages but still holds the last response (the agent cleared or trimmed
    its history) extends it with what follows that response, so the run keeps the full
    history. Any other request starts a new history sharing the longest common prefix
    (a retry, a side call, a restart). The longest history is kept (ties: the latest);
    what was left out or edited is reported in `warnings`.
    """
    rebuilding = Rebuilding()
    for exchange in exchanges:
        rebuilding.add(exchange)
    return rebuilding.result(path, warnings)


class Rebuilding:
    """`rebuild` one exchange at a time: `add` the exchanges in the order they were
    made, read `result` whenever (as often as wanted), and keep adding. A live source
    that receives calls in order so pays for each call once, not for the whole run
    again with every new call."""

    def __init__(self) -> None:
        self.histories: list[_History] = []
        self.replies: list[tuple[str, Message]] = []  # only these outlive their exchange
        self.added = 0
        # A request repeats the messages of the one before it: when they are the same
        # objects (a reader that reuses what it read), their keys are not computed
        # again. Only the last request and its keys are held: a long log's requests
        # are never all held, and a request that starts with the last one's messages
        # costs only its new ones.
        self._held: tuple[Message, ...] = ()
        self._held_keys: list[Hashable] = []

    def add(self, exchange: Exchange) -> None:
        """Follow one more exchange (made after all those added before)."""
        keys = self._keys_of(exchange.request)
        history, start = _follow(self.histories, keys, exchange.where)
        if history is None:
            history = _fork(self.histories, exchange, keys)
            self.histories.append(history)
            start = len(keys)
        # Only the messages kept are given the call's time: the repeated ones are not
        # copied for nothing.
        history.messages.extend(_at(m, exchange.sent) for m in exchange.request[start:])
        history.keys.extend(keys[start:])
        if exchange.response is not None:
            response = _at(exchange.response, exchange.answered)
            history.messages.append(response)
            history.keys.append(message_key(response))
            self.replies.append((exchange.where, response))
        history.latest, history.model = self.added, exchange.model or history.model
        self.added += 1

    def _keys_of(self, request: tuple[Message, ...]) -> list[Hashable]:
        """The message keys of `request`, those of messages it shares with the last
        request (the same objects) taken from there; the request is held next."""
        held, held_keys = self._held, self._held_keys
        n = len(held)
        if n and len(request) >= n and all(map(operator.is_, held, request)):
            keys = held_keys + [message_key(m) for m in request[n:]]
        else:
            # `held` is alive, so an id found here is its message's.
            known = dict(zip(map(id, held), held_keys, strict=True))
            keys = [known.get(id(m)) or message_key(m) for m in request]
        self._held, self._held_keys = request, keys
        return keys

    def result(self, path: str, warnings: list[str] | None) -> tuple[tuple[Message, ...], str]:
        """The run's messages and model so far; what was left out or edited is
        reported in `warnings` (see rebuild), unless it is None (a caller that shows
        no warnings: working them out walks every reply so far)."""
        if not self.histories:
            return (), ""
        kept = max(self.histories, key=lambda h: (len(h.messages), h.latest))
        if warnings is not None:
            _report(path, self.replies, kept, warnings)
        return tuple(kept.messages), kept.model


def _at(message: Message, time: float | None) -> Message:
    """`message` with `time` unless it has one already or there is none."""
    return message if time is None or message.time is not None else replace(message, time=time)


def _follow(
    histories: list[_History], keys: list[Hashable], where: str
) -> tuple[_History | None, int]:
    """The history the request continues and how many of its messages are old."""
    recent = sorted(histories, key=lambda h: -h.latest)
    for history in recent:
        if history.keys == keys[: len(history.keys)]:
            return history, len(history.keys)
    for history in recent:
        if history.messages and history.messages[-1].role == "assistant":
            last = history.keys[-1]
            for j in range(len(keys) - 1, -1, -1):
                if keys[j] == last:
                    history.edited.append(where)
                    return history, j + 1
    return None, 0


def _fork(histories: list[_History], exchange: Exchange, keys: list[Hashable]) -> _History:
    """A new history for the exchange's request, reusing the messages (and so the
    usage) of the history sharing its longest prefix; its own given the call's time."""
    best, shared = None, 0
    for history in histories:
        n = 0
        while n < min(len(keys), len(history.keys)) and keys[n] == history.keys[n]:
            n += 1
        if n > shared:
            best, shared = history, n
    prefix = best.messages[:shared] if best is not None else []
    own = (_at(m, exchange.sent) for m in exchange.request[shared:])
    return _History([*prefix, *own], list(keys))


def _report(path: str, replies: list[tuple[str, Message]], kept: _History, out: list[str]) -> None:
    if kept.edited:
        out.append(
            f"{path}: {kept.edited[0]}: {len(kept.edited)} request(s) sent an edited history "
            "(the agent cleared or trimmed earlier messages); the run keeps the full "
            "history, and their measured usage is of what was actually sent"
        )
    present = {id(m) for m in kept.messages}
    left = [where for where, reply in replies if id(reply) not in present]
    if left:
        shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
        out.append(
            f"{path}: the requests do not all continue one conversation; kept the longest "
            f"history and left out {len(left)} response(s) of other histories: {shown}"
        )


def message_key(message: Message) -> Hashable:
    """What identifies a message when a later request repeats it.

    Thinking is left out and text stripped (clients drop or trim them when resending);
    tool-call arguments compare as JSON values (clients re-serialize them).
    """
    keys = (_part_key(p) for p in message.parts)
    return (message.role, tuple(k for k in keys if k is not None))


def _part_key(part: Part) -> Hashable | None:
    if isinstance(part, ThinkingPart):
        return None
    if isinstance(part, TextPart):
        return ("text", part.text.strip()) if part.text.strip() else None
    if isinstance(part, ToolCallPart):
        try:
            arguments = json.dumps(json.loads(part.arguments), sort_keys=True)
        except ValueError:
            arguments = part.arguments
        return ("call", part.id, part.name, arguments)
    return part
