"""The native contextsim format, version 1 (see docs/format.md).

JSON: ``{"contextsim": 1, "runs": [RUN, ...]}``.
JSONL: a ``{"contextsim": 1, "type": "run", ...}`` header line starts each run, then one
``{"type": "message", ...}`` or ``{"type": "compaction", ...}`` line per item, which
suits streaming a live run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from contextsim.ingest.base import (
    Document,
    FileEnd,
    FormatError,
    LazyDocument,
    Lines,
    ParsedFile,
    RunPiece,
    Source,
    arguments_text,
    expect,
    iso_time,
    parse_time,
)
from contextsim.model import (
    ROLES,
    Compaction,
    Elision,
    ImagePart,
    Message,
    Part,
    Rejection,
    Run,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpecPart,
    Usage,
    refused_for_size,
)

VERSION = 1
PIECE = 500
"""Messages handed over at a time by NativeImporter.document_pieces."""
RUN_FIELDS = ("title", "model", "session_id", "parent_session_id", "subagent", "project")
SOURCE_FIELDS = {
    "format": str,
    "context_window": int,
    "harness_version": str,
    "window_source": str,
    "compaction_request": bool,
}
"""What a run sent on from another log keeps of its source (contextsim.cli.send_history):
the source's format (its agent's rules and prices follow it), its window and where that
came from, its agent's version, whether it is a compaction's request. Optional."""
FORMAT_NAME = re.compile(r"[a-z0-9_-]{1,30}")


class NativeImporter:
    name = "native"
    label = "contextsim native JSON / JSONL"

    document_head = re.compile(r'\s*\{\s*"contextsim"\s*:')

    def sniff(self, source: Source) -> bool:
        if isinstance(source, Lines):
            return bool(source.sample) and "contextsim" in source.sample[0].data
        return isinstance(source.data, dict) and "contextsim" in source.data

    def parse(self, source: Source) -> ParsedFile:
        if isinstance(source, Document):
            return ParsedFile(self.name, _parse_document(source), ())
        return ParsedFile(self.name, _parse_lines(source), tuple(source.warnings))

    def document_pieces(
        self, source: LazyDocument, claims: Callable[[Source], bool] | None = None
    ) -> Iterator[RunPiece | FileEnd]:
        """The runs of a big document, their messages PIECE at a time as they are parsed
        (the document is never held whole), then their facts. A document whose head is
        native's is native's whatever follows (`claims` is not asked)."""
        path = source.path
        counts: dict[int, int] = {}
        batch: list[Message] = []
        current = -1
        document: Any = None
        for at, element in source.elements(("runs", "*", "messages")):
            if not at:
                document = element
                break
            r, i = int(at[1]), int(at[3])
            if r != current and batch:
                yield RunPiece(current, tuple(batch))
                batch = []
            current = r
            batch.append(parse_message(path, f"$.runs[{r}].messages[{i}]", element))
            counts[r] = i + 1
            if len(batch) >= PIECE:
                yield RunPiece(r, tuple(batch))
                batch = []
        if batch:
            yield RunPiece(current, tuple(batch))
        runs = _parse_document(Document(path, document), counts)
        yield FileEnd(self.name, tuple(enumerate(runs)), tuple(source.warnings))


def _check_version(path: str, where: str, data: dict[str, Any]) -> None:
    if data.get("contextsim") != VERSION:
        raise FormatError(
            path,
            where,
            f"unsupported contextsim version {data.get('contextsim')!r}; expected {VERSION}",
        )


def _parse_document(source: Document, streamed: dict[int, int] | None = None) -> tuple[Run, ...]:
    """The document's runs; with `streamed` (run -> messages handed over before, their
    arrays left empty in the document), the runs' facts only (no messages)."""
    path, data = source.path, source.data
    expect(path, "$", data, dict, "an object with 'contextsim' and 'runs'")
    _check_version(path, "$.contextsim", data)
    runs = expect(path, "$.runs", data.get("runs"), list, "a list of runs")
    out = []
    for r, run in enumerate(runs):
        where = f"$.runs[{r}]"
        expect(path, where, run, dict, "a run object")
        items = expect(path, f"{where}.messages", run.get("messages"), list, "a list")
        messages = tuple(
            parse_message(path, f"{where}.messages[{i}]", m) for i, m in enumerate(items)
        )
        listed = expect(path, f"{where}.compactions", run.get("compactions") or [], list, "a list")
        compactions = tuple(
            _compaction(path, f"{where}.compactions[{i}]", c) for i, c in enumerate(listed)
        )
        listed = expect(path, f"{where}.elisions", run.get("elisions") or [], list, "a list")
        elisions = [_elision(path, f"{where}.elisions[{i}]", e) for i, e in enumerate(listed)]
        count = len(messages) if streamed is None else streamed.get(r, 0)
        out.append(_run(path, where, run, messages, compactions, elisions, count))
    return tuple(out)


def _parse_lines(source: Lines) -> tuple[Run, ...]:
    path = source.path
    runs: list[Run] = []
    header: dict[str, Any] | None = None
    header_line = 0
    messages: list[Message] = []
    compactions: list[Compaction] = []
    elisions: list[Elision] = []
    for record in source:
        where, data = f"line {record.line}", record.data
        kind = data.get("type")
        if kind == "run":
            if header is not None:
                runs.append(
                    _run(path, f"line {header_line}", header, messages, compactions, elisions)
                )
            _check_version(path, where, data)
            header, header_line, messages, compactions = data, record.line, [], []
            elisions = []
        elif header is None:
            raise FormatError(path, where, "expected a run header line first")
        elif kind == "message":
            # Fields inside a line are named by a JSON path: "line 3, $.role".
            messages.append(parse_message(path, f"{where}, $", data))
        elif kind == "compaction":
            compactions.append(_compaction(path, f"{where}, $", data))
        elif kind == "elision":
            elisions.append(_elision(path, f"{where}, $", data))
        else:
            expected = "run, message, compaction or elision"
            raise FormatError(path, where, f"unknown record type {kind!r}; expected {expected}")
    if header is None:
        raise FormatError(path, "", "no run header line found")
    runs.append(_run(path, f"line {header_line}", header, messages, compactions, elisions))
    return tuple(runs)


def _run(
    path: str,
    where: str,
    data: dict[str, Any],
    messages: list[Message] | tuple[Message, ...],
    compactions: list[Compaction] | tuple[Compaction, ...],
    elisions: Sequence[Elision] = (),
    count: int | None = None,
) -> Run:
    """The run of header `data`; `count` its messages when they are not in `messages`
    (handed over apart), for the elisions kept (those of a message that exists)."""
    fields = {k: data[k] for k in RUN_FIELDS if k in data}
    for key, value in fields.items():
        kind: type = bool if key == "subagent" else str
        expect(path, f"{where}.{key}", value, kind, f"a {kind.__name__}")
    source: dict[str, Any] = {"format": "native"}
    for key, kind in SOURCE_FIELDS.items():
        if key in data and data[key] is not None:
            value = data[key]
            if kind is int and (
                isinstance(value, bool) or not isinstance(value, int) or value <= 0
            ):
                raise FormatError(path, f"{where}.{key}", "expected a positive whole number")
            expect(path, f"{where}.{key}", value, kind, f"a {kind.__name__}")
            source[key] = value
    listed = expect(path, f"{where}.rejections", data.get("rejections") or [], list, "a list")
    source["rejections"] = tuple(
        _rejection(path, f"{where}.rejections[{i}]", r) for i, r in enumerate(listed)
    )
    if not FORMAT_NAME.fullmatch(source["format"]):
        raise FormatError(path, f"{where}.format", "expected a format's name such as codex")
    return Run(
        messages=tuple(messages),
        compactions=tuple(compactions),
        elisions=tuple(
            e for e in elisions if e.message < (len(messages) if count is None else count)
        ),
        **{"title": "untitled run", **fields, **source},
    )


def _elision(path: str, where: str, data: Any) -> Elision:
    """{"message": index, "from_step": step, "text": what was sent in its place}."""
    expect(path, where, data, dict, "an elision object")
    message = expect(path, f"{where}.message", data.get("message"), int, "a message index")
    step = expect(path, f"{where}.from_step", data.get("from_step"), int, "a step index")
    text = expect(path, f"{where}.text", data.get("text"), str, "the text sent")
    if message < 0 or step < 0:
        raise FormatError(path, where, f"expected indexes of 0 or more, found {message}, {step}")
    return Elision(message, step, text)


def _rejection(path: str, where: str, data: Any) -> Rejection:
    expect(path, where, data, dict, "a rejection object")
    before = expect(path, f"{where}.before_message", data.get("before_message"), int, "an int")
    reason = expect(path, f"{where}.reason", data.get("reason", ""), str, "a string")
    overflow = data.get("overflow")
    if overflow is not None:
        expect(path, f"{where}.overflow", overflow, bool, "true or false")
    return Rejection(
        before,
        reason[:300],
        refused_for_size(reason) if overflow is None else overflow,
        _time(path, f"{where}.time", data.get("time")),
    )


def _compaction(path: str, where: str, data: Any) -> Compaction:
    expect(path, where, data, dict, "a compaction object")
    before = expect(path, f"{where}.before_message", data.get("before_message"), int, "an int")
    pre = data.get("pre_tokens")
    if pre is not None:
        expect(path, f"{where}.pre_tokens", pre, int, "an int")
    return Compaction(before, pre, str(data.get("trigger") or ""))


def parse_message(path: str, where: str, data: Any) -> Message:
    """One native message object (also used by the live-streaming API)."""
    expect(path, where, data, dict, "a message object")
    role = data.get("role")
    if role not in ROLES:
        raise FormatError(path, f"{where}.role", f"expected one of {', '.join(ROLES)}")
    content = data.get("content")
    if isinstance(content, str):
        parts: tuple[Part, ...] = (TextPart(content),)
    else:
        expect(path, f"{where}.content", content, list, "a string or a list of parts")
        parts = tuple(_part(path, f"{where}.content[{i}]", p) for i, p in enumerate(content))
    usage = data.get("usage")
    return Message(
        role=role,
        parts=parts,
        usage=_usage(path, f"{where}.usage", usage) if usage is not None else None,
        compact_summary=bool(data.get("compact_summary", False)),
        source=where.removesuffix(", $"),
        time=_time(path, f"{where}.timestamp", data.get("timestamp")),
        attachment=role == "system" and data.get("attachment") is True,
    )


def _time(path: str, where: str, value: Any) -> float | None:
    """A message's timestamp: ISO 8601 text or seconds (or ms, us, ns) since the epoch;
    a value given that is neither is an error, naming it."""
    if value is None:
        return None
    found = parse_time(value)
    if found is None:
        raise FormatError(
            path, where, f"expected an ISO 8601 time or seconds since the epoch, got {value!r}"
        )
    return found


MAX_USAGE = 10**12
"""Token counts from 10^12 on are not counts of anything sent to a model."""


def _usage(path: str, where: str, data: Any) -> Usage:
    expect(path, where, data, dict, "a usage object")
    values = {}
    for key in ("input_tokens", "cache_read", "cache_write", "output_tokens"):
        value = data.get(key, 0)
        expect(path, f"{where}.{key}", value, int, "a whole number of tokens")
        if not 0 <= value < MAX_USAGE:
            raise FormatError(
                path, f"{where}.{key}", f"expected a number of tokens from 0 to {MAX_USAGE - 1:,}"
            )
        values[key] = value
    hour = data.get("cache_write_1h", 0)
    expect(path, f"{where}.cache_write_1h", hour, int, "a whole number of tokens")
    if not 0 <= hour <= values["cache_write"]:
        raise FormatError(
            path, f"{where}.cache_write_1h", "expected a number of tokens from 0 to cache_write"
        )
    model = data.get("model", "")
    expect(path, f"{where}.model", model, str, "a model id")
    return Usage(**values, cache_write_1h=hour, model=model[:200])


def _part(path: str, where: str, data: Any) -> Part:
    expect(path, where, data, dict, "a part object")
    kind = data.get("type")

    def text(key: str) -> str:
        return str(expect(path, f"{where}.{key}", data.get(key), str, "a string"))

    if kind == "text":
        return TextPart(text("text"))
    if kind == "thinking":
        sizes = {}
        for key in ("opaque_chars", "sent_tokens"):
            value = data.get(key, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise FormatError(path, f"{where}.{key}", "expected a whole number >= 0")
            sizes[key] = value
        turn_only = data.get("turn_only", False)
        expect(path, f"{where}.turn_only", turn_only, bool, "true or false")
        return ThinkingPart(
            text("text"),
            opaque_chars=sizes["opaque_chars"],
            sent_tokens=sizes["sent_tokens"],
            turn_only=turn_only,
        )
    if kind == "tool_call":
        return ToolCallPart(
            text("id"),
            text("name"),
            arguments_text(data.get("arguments")),
            bool(data.get("server_side", False)),
        )
    if kind == "tool_result":
        return ToolResultPart(text("call_id"), text("text"), bool(data.get("is_error", False)))
    if kind == "image":
        return ImagePart(str(data.get("media_type") or ""))
    if kind == "tool_spec":
        return ToolSpecPart(text("name"), arguments_text(data.get("definition")))
    raise FormatError(
        path,
        f"{where}.type",
        f"unknown part type {kind!r}; expected text, thinking, tool_call, tool_result, "
        "image or tool_spec",
    )


def part_to_dict(part: Part) -> dict[str, Any]:
    """A part as its native JSON object."""
    if isinstance(part, ThinkingPart) and (part.opaque_chars or part.sent_tokens or part.turn_only):
        thought: dict[str, Any] = {"type": part.type, "text": part.text}
        if part.opaque_chars:
            thought["opaque_chars"] = part.opaque_chars
        if part.sent_tokens:
            thought["sent_tokens"] = part.sent_tokens
        if part.turn_only:
            thought["turn_only"] = True
        return thought
    if isinstance(part, TextPart | ThinkingPart):
        return {"type": part.type, "text": part.text}
    if isinstance(part, ToolCallPart):
        call = {"type": part.type, "id": part.id, "name": part.name, "arguments": part.arguments}
        return {**call, "server_side": True} if part.server_side else call
    if isinstance(part, ToolResultPart):
        out: dict[str, Any] = {"type": part.type, "call_id": part.call_id, "text": part.text}
        if part.is_error:
            out["is_error"] = True
        return out
    if isinstance(part, ToolSpecPart):
        return {"type": part.type, "name": part.name, "definition": part.definition}
    return {"type": part.type, "media_type": part.media_type}


def message_to_dict(message: Message) -> dict[str, Any]:
    """A message as its native JSON object (round-trips through parse_message)."""
    out: dict[str, Any] = {
        "role": message.role,
        "content": [part_to_dict(p) for p in message.parts],
    }
    if message.usage is not None:
        u = message.usage
        out["usage"] = {
            "input_tokens": u.input_tokens,
            "cache_read": u.cache_read,
            "cache_write": u.cache_write,
            "output_tokens": u.output_tokens,
        }
        if u.cache_write_1h:
            out["usage"]["cache_write_1h"] = u.cache_write_1h
        if u.model:
            out["usage"]["model"] = u.model
    if message.compact_summary:
        out["compact_summary"] = True
    if message.attachment:
        out["attachment"] = True
    if message.time is not None:
        out["timestamp"] = iso_time(message.time)
    return out


def run_to_dict(run: Run) -> dict[str, Any]:
    """A run as a native JSON run object."""
    return {
        "title": run.title,
        "model": run.model,
        "session_id": run.session_id,
        "parent_session_id": run.parent_session_id,
        "subagent": run.subagent,
        **({"project": run.project} if run.project else {}),
        **{
            key: getattr(run, key)
            for key in SOURCE_FIELDS
            if getattr(run, key) not in ("native", "", None, False)
        },
        "messages": [message_to_dict(m) for m in run.messages],
        "compactions": [
            {"before_message": c.before_message, "pre_tokens": c.pre_tokens, "trigger": c.trigger}
            for c in run.compactions
        ],
        "elisions": [
            {"message": e.message, "from_step": e.from_step, "text": e.text} for e in run.elisions
        ],
        **(
            {
                "rejections": [
                    {
                        "before_message": r.before_message,
                        "reason": r.reason,
                        "overflow": r.overflow,
                        **({"time": r.time} if r.time is not None else {}),
                    }
                    for r in run.rejections
                ]
            }
            if run.rejections
            else {}
        ),
    }
