"""Codex CLI rollout JSONL (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}`` with type ``session_meta``,
``turn_context``, ``response_item`` (what the model saw or said), ``event_msg`` (what the
UI showed) or ``compacted``. Older rollouts have no envelope: a first line with the
session ``id``, then bare response items and ``{"record_type": "state"}`` lines.

How the run is built (each choice keeps the counts honest):

- Messages come from response items only; ``event_msg`` agent_message, agent_reasoning
  and user_message repeat them and are not counted again.
- ``developer`` messages become ``system``: they are instructions sent to the model.
  User-role context blocks that Codex injects (AGENTS.md, environment_context) become
  ``system`` too, so that only what the person typed is a user turn. A user message is
  typed when an ``event_msg`` user_message follows it; in files without those events,
  when its text does not start with ``<`` or ``# AGENTS.md``.
- One model call is a run of consecutive assistant-side items (reasoning, assistant
  text, tool calls, web searches) and becomes one assistant message. A new measured
  usage ends it, as does any item the model did not write (a tool output, a message).
- Usage is ``info.last_token_usage`` of ``event_msg`` token_count. OpenAI's input_tokens
  include the cached ones, so Usage.input_tokens = input - cached, cache_read = cached.
  Codex writes each event twice (again before the next call) and some with ``info``
  null: an event equal to the one before, or null, is ignored. An all-zero usage is the
  bookkeeping of a compaction, not a model call. Where an event stands depends on the
  version: from 0.94 on it follows its call's items; 0.64/0.65 write it before them (the
  response is streamed to its end before its items are recorded). The file's first
  usage tells which: one that comes before any model output is held for the call that
  follows. A usage that finds no call for it is attached to nothing and counted in a
  warning.
- The window is ``info.model_context_window`` of every token_count (``task_started``
  states it only in some versions): the last one stated. It is the usable window, 95%
  of the model's (258,400 for gpt-5's 272,000).
- Reasoning is a ThinkingPart holding its summary and the length of its encrypted
  content (``opaque_chars``; a redaction marker's ``len=``); no estimator counts it.
- A web search is a tool call whose arguments are its action; it has no result item.
- ``compacted`` becomes a Compaction (pre_tokens: the last measured context; trigger
  ``manual`` when a task did nothing but compact, as ``/compact`` does, else ``auto``)
  and then a user message marked ``compact_summary`` holding the replacement history,
  which is what the model sees from then on (its encrypted ``compaction`` item is opaque
  and counts as nothing). Earlier messages stay: a run is the saved conversation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from contextsim.ingest.base import (
    Document,
    FileEnd,
    Lines,
    Names,
    ParsedFile,
    Record,
    Reopen,
    RunPiece,
    Source,
    expect,
    parse_time,
    token_count,
)
from contextsim.model import (
    Compaction,
    Message,
    Part,
    Role,
    Run,
    TextPart,
    ThinkingPart,
    Usage,
)
from contextsim.systems.openai_api.items import CALL_ITEMS, ITEM_TYPES, OUTPUT_ITEMS, item_parts

RECORDS = Names({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
TITLE_LENGTH = 80
FLUSH_LINES = 1_000
KEEP = 64
"""CodexImporter.pieces hands messages over every FLUSH_LINES lines, all but the last
KEEP (a usage event measures the call before the tool outputs that follow it, and a
user_message event says which user message was typed: both reach back a few messages)."""


class CodexImporter:
    name = "codex"
    label = "Codex CLI rollout JSONL"

    def sniff(self, source: Source) -> bool:
        """True for enveloped rollout records, or an old-shape session line followed by
        bare response items. Native and Claude Code records have neither."""
        if isinstance(source, Document):
            return isinstance(source.data, dict) and _is_envelope(source.data)
        sample = [r.data for r in source.sample]
        if any(_is_envelope(d) for d in sample):
            return True
        return (
            bool(sample)
            and _is_old_meta(sample[0])
            and any(d.get("type") in ITEM_TYPES or "record_type" in d for d in sample[1:])
        )

    def parse(self, source: Source) -> ParsedFile:
        """One run per rollout file, read in one pass. Raises FormatError naming the line
        of a structurally wrong record; unknown record and item types are skipped."""
        builder = _Builder(source.path)
        if isinstance(source, Document):  # a rollout cut after its first line
            builder.feed(Record(1, expect(source.path, "line 1", source.data, dict, "a record")))
        else:
            for record in source:
                builder.feed(record)
        run = builder.finish()
        own = tuple(source.warnings) if isinstance(source, Lines) else ()
        return ParsedFile(self.name, (run,), (*own, *builder.warnings()))

    def pieces(self, source: Lines) -> Iterator[RunPiece | FileEnd]:
        """What `parse` gives, handed over as the lines are read: every FLUSH_LINES
        lines, the messages but the last KEEP, so a long rollout is never whole in
        memory. Raises Reopen when a line changes what was handed over (a usage for a
        call further back, base instructions or a first user_message event arriving
        late): then the file is to be read whole."""
        builder = _Builder(source.path)
        for n, record in enumerate(source, 1):
            builder.feed(record)
            if n % FLUSH_LINES == 0:
                yield from builder.flush(KEEP)
        builder.end_call()
        yield from builder.flush(0)
        yield FileEnd(self.name, ((0, builder.facts()),), (*source.warnings, *builder.warnings()))


def _is_envelope(data: dict[str, Any]) -> bool:
    return data.get("type") in RECORDS and "payload" in data


def _is_old_meta(data: dict[str, Any]) -> bool:
    return "type" not in data and "role" not in data and {"id", "timestamp"} <= data.keys()


class _Builder:
    """Turns records, in file order, into one Run."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.messages: list[Message] = []
        self.compactions: list[Compaction] = []
        self.call: list[Part] = []  # the model call being read
        self.call_source = ""
        self.last_call = -1  # index of the last assistant message
        self.last_measured = False  # whether it has its usage
        self.last_info: Any = None  # token_count events are written twice
        self.last_context: int | None = None
        self.model = ""
        self.other_models: list[str] = []
        self.session_id = ""
        self.typed: set[int] = set()  # user messages an event says the person typed
        self.user_events = 0
        self.early_user_events = 0  # events still waiting for their message
        self.orphan_usage = 0
        self.task_fresh = False  # nothing said since the task started
        self.manual: int | None = None  # a compaction that may be a /compact task
        self.announced = False  # a compacted record awaiting its context_compacted event
        self.usage_first: bool | None = None  # 0.64/0.65: a call's usage precedes its items
        self.held: Usage | None = None  # such a usage, until its call is read
        self.held_time: float | None = None  # when it was written
        self.held_reasoning: dict[int, int] = {}  # reasoning tokens of the newest usage
        self.skipped: Counter[str] = Counter()
        self.window: int | None = None  # model_context_window, as the rollout states it
        self.instructions = ""  # session_meta.base_instructions: sent with every request
        self.cwd = ""  # session_meta.cwd: the folder the session worked in
        self.instructions_source = ""
        self.now: float | None = None  # the timestamp of the record being read
        self.call_time: float | None = None
        # Handing over (CodexImporter.pieces): messages before `handed` are gone, read
        # with the base instructions first or not and with or without user events.
        self.handed = 0
        self.handed_as: tuple[bool, bool] | None = None
        self.title = ""

    def feed(self, record: Record) -> None:
        data, where = record.data, f"line {record.line}"
        self.now = parse_time(data.get("timestamp"))
        raw = data.get("type")
        kind = raw if isinstance(raw, str) else ""
        if kind in RECORDS:
            payload = expect(self.path, where, data.get("payload"), dict, "'payload' object")
            handlers = {
                "session_meta": self._session_meta,
                "turn_context": self._turn_context,
                "response_item": self._response_item,
                "event_msg": self._event,
                "compacted": self._compacted,
            }
            handlers[kind](payload, where)
        elif kind in ITEM_TYPES:  # old shape: a bare response item
            self._response_item(data, where)
        elif _is_old_meta(data) and not self.session_id:
            self.session_id = _string(self.path, where, data, "id")
        elif "record_type" not in data:  # old-shape state records carry nothing we need
            self.skipped[f"record type {raw!r}"[:80]] += 1

    def _session_meta(self, payload: dict[str, Any], where: str) -> None:
        self.session_id = self.session_id or _string(self.path, where, payload, "id")
        cwd = payload.get("cwd")
        if isinstance(cwd, str) and not self.cwd:
            self.cwd = cwd[:500]
        base = payload.get("base_instructions")
        text = base.get("text") if isinstance(base, dict) else base
        if isinstance(text, str) and text and not self.instructions:
            self.instructions, self.instructions_source = text, where
        self._turn_context(payload, where)

    def _turn_context(self, payload: dict[str, Any], where: str) -> None:
        model = _string(self.path, where, payload, "model")
        if model and self.model and model != self.model and model not in self.other_models:
            self.other_models.append(model)
        self.model = self.model or model

    def _response_item(self, item: dict[str, Any], where: str) -> None:
        kind, role = item.get("type"), item.get("role")
        self.task_fresh, self.manual = False, None
        if kind not in ITEM_TYPES or (kind == "message" and not isinstance(role, str)):
            self.skipped[f"response item {kind!r}"] += 1
            return
        parts = item_parts(self.path, where, item)
        if kind in ("reasoning", *CALL_ITEMS) or role == "assistant":
            if not self.call:
                self.call_source, self.call_time = where, self.now
            self.call.extend(parts)
            return
        self._end_call(None)
        new: Role = "tool" if kind in OUTPUT_ITEMS else "user" if role == "user" else "system"
        if new == "user" and self.early_user_events:
            self.early_user_events -= 1
            self.typed.add(len(self.messages))
        self.messages.append(Message(new, parts, source=where, time=self.now))

    def _end_call(self, usage: Usage | None) -> bool:
        """Close the model call being read, if any; True when there was one. In a file
        whose usage comes first, the usage held for the call is its own."""
        if not self.call:
            return False
        when = self.call_time
        if usage is None and self.held is not None:
            usage, self.held = self.held, None
            # The usage is written when the response has come, its items just after:
            # the response came at the usage's time (a day's totals follow it).
            when = self.held_time if self.held_time is not None else when
        self.last_call = len(self.messages)
        self.last_measured = usage is not None
        call = Message("assistant", tuple(self.call), source=self.call_source, time=when)
        self.messages.append(self._measured(call, usage))
        self.call = []
        return True

    def _measured(self, call: Message, usage: Usage | None) -> Message:
        """`call` with its usage, and the reasoning it wrote sized as measured: the
        API sends a call's reasoning back (its reasoning_output_tokens) until the next
        user turn, and counts it then; its summary is not what is sent."""
        if usage is None:
            return call
        reasoning = self.held_reasoning.pop(id(usage), 0)
        parts, given = [], False
        for part in call.parts:
            if isinstance(part, ThinkingPart):
                sent = 0 if given else reasoning
                given = given or reasoning > 0
                part = replace(part, sent_tokens=sent, turn_only=True)
            parts.append(part)
        return replace(call, parts=tuple(parts), usage=usage)

    def _event(self, payload: dict[str, Any], where: str) -> None:
        kind = payload.get("type")
        if kind == "token_count":
            self._token_count(payload.get("info"), where)
        elif kind == "user_message":
            self._user_event()
        elif kind == "task_started":
            self.task_fresh, self.manual = True, None
            window = payload.get("model_context_window")
            if isinstance(window, int) and not isinstance(window, bool) and 0 < window < 10**9:
                self.window = window
        elif kind == "task_complete" and self.manual is not None:
            self.compactions[self.manual] = replace(self.compactions[self.manual], trigger="manual")
        elif kind == "context_compacted":
            if not self.announced:  # some versions write only this event: no summary known
                self._add_compaction()
            self.announced = False

    def _token_count(self, info: Any, where: str) -> None:
        if info is None or info == self.last_info:
            return
        expect(self.path, where, info, dict, "token_count 'info' object or null")
        self.last_info = info
        window = info.get("model_context_window")
        if isinstance(window, int) and not isinstance(window, bool) and 0 < window < 10**9:
            self.window = window
        last = expect(self.path, where, info.get("last_token_usage"), dict, "'last_token_usage'")
        usage = _usage(self.path, where, last)
        if usage.context == 0 and usage.output_tokens == 0:
            return
        reasoning = token_count(
            self.path, where, last.get("reasoning_output_tokens"), "'reasoning_output_tokens'"
        )
        self.held_reasoning = {id(usage): min(reasoning, usage.output_tokens)}
        self.last_context = usage.context
        if self.usage_first is None:
            self.usage_first = not self.call and self.last_call < 0
        if self.usage_first:
            self._end_call(None)
            if self.held is not None:  # two usages with no call between them
                self.orphan_usage += 1
            self.held = usage
            self.held_time = self.now
            return
        if self._end_call(usage):
            return
        if 0 <= self.last_call < self.handed:
            if not self.last_measured:
                raise Reopen(f"{self.path}: {where} measures a call already handed over")
            self.orphan_usage += 1
        elif self.last_call >= 0 and self.messages[self.last_call].usage is None:
            # Written after the call's tool outputs: it still measures that call.
            self.messages[self.last_call] = self._measured(self.messages[self.last_call], usage)
            self.last_measured = True
        else:
            self.orphan_usage += 1

    def _user_event(self) -> None:
        self.user_events += 1
        last = len(self.messages) - 1
        if last >= 0 and self.messages[last].role == "user" and last not in self.typed:
            self.typed.add(last)
        else:  # the event came first: the next user message is the typed one
            self.early_user_events += 1

    def _compacted(self, payload: dict[str, Any], where: str) -> None:
        history = payload.get("replacement_history")
        if history is not None:
            expect(self.path, where, history, list, "'replacement_history' list")
            parts = _history_parts(self.path, where, history)
        else:  # older local compaction: the summary text alone
            parts = (TextPart(_string(self.path, where, payload, "message")),)
        self._add_compaction()
        self.messages.append(
            Message("user", parts, compact_summary=True, source=where, time=self.now)
        )
        self.announced = True

    def _add_compaction(self) -> None:
        self._end_call(None)
        if self.task_fresh:
            self.manual = len(self.compactions)
        self.compactions.append(Compaction(len(self.messages), self.last_context, "auto"))

    def finish(self) -> Run:
        """The run read so far (call once, after the last record)."""
        self._end_call(None)
        messages = tuple(self._final(i, m) for i, m in enumerate(self.messages))
        if self.instructions:
            messages = (self._instructions(), *messages)
        return replace(self.facts(_title(messages)), messages=messages)

    def end_call(self) -> None:
        """Close the model call being read (after the last record)."""
        self._end_call(None)

    def facts(self, title: str | None = None) -> Run:
        """The run without its messages (those handed over, or given by `finish`)."""
        compactions = tuple(self.compactions)
        if self.instructions:
            compactions = tuple(
                replace(c, before_message=c.before_message + 1) for c in compactions
            )
        title = self.title if title is None else title
        return Run(
            title=title or f"Codex session {self.session_id}".strip(),
            messages=(),
            format="codex",
            model=self.model,
            session_id=self.session_id,
            compactions=compactions,
            context_window=self.window,
            project=self.cwd,
        )

    def flush(self, keep: int) -> Iterator[RunPiece]:
        """Hand over the messages read but the last `keep`, as `finish` gives them, and
        let them go."""
        end = len(self.messages) - keep
        last_chance = keep == 0 and self.handed_as is None and bool(self.instructions)
        if end <= self.handed and not last_chance:
            return
        read_as = (bool(self.instructions), self.user_events > 0)
        if self.handed_as is None:
            self.handed_as = read_as
        elif read_as != self.handed_as:
            raise Reopen(f"{self.path}: base instructions or user events came after messages")
        out = [
            self._final(i, m) for i, m in enumerate(self.messages[self.handed : end], self.handed)
        ]
        if not self.handed and self.instructions:
            out.insert(0, self._instructions())
        for i in range(self.handed, end):
            self.messages[i] = _GONE
        self.handed = end
        self.title = self.title or _title(tuple(out))
        yield RunPiece(0, tuple(out))

    def _final(self, index: int, message: Message) -> Message:
        return (
            replace(message, role="system") if self._is_context_block(index, message) else message
        )

    def _instructions(self) -> Message:
        # Codex sends its base instructions with every request (the Responses API's
        # `instructions`): the first system message, which no compaction removes.
        return Message("system", (TextPart(self.instructions),), source=self.instructions_source)

    def _is_context_block(self, index: int, message: Message) -> bool:
        if message.role != "user" or message.compact_summary:
            return False
        if self.user_events:
            return index not in self.typed
        return message.text.lstrip().startswith(("<", "# AGENTS.md"))

    def warnings(self) -> list[str]:
        out = [f"{self.path}: skipped {n} x {what}" for what, n in sorted(self.skipped.items())]
        if self.other_models:
            out.append(f"{self.path}: also used {', '.join(self.other_models)}; run says first")
        orphans = self.orphan_usage + (self.held is not None)  # held for a call never read
        if orphans:
            out.append(f"{self.path}: {orphans} usage event(s) follow no model output")
        return out


_GONE = Message("system", ())
"""In place of a message handed over (CodexImporter.pieces)."""


def _title(messages: tuple[Message, ...]) -> str:
    """The first typed user message on one line, shortened to TITLE_LENGTH."""
    first = next((m for m in messages if m.is_user_turn), None)
    title = " ".join(first.text.split()) if first else ""
    if len(title) > TITLE_LENGTH:
        title = title[: TITLE_LENGTH - 1].rstrip() + "…"
    return title


def _string(path: str, where: str, data: dict[str, Any], key: str) -> str:
    """`data[key]` as a string; "" when absent; FormatError when it is not a string."""
    value = data.get(key)
    return "" if value is None else str(expect(path, where, value, str, f"{key!r} string"))


def _usage(path: str, where: str, data: dict[str, Any]) -> Usage:
    def count(key: str) -> int:
        return token_count(path, where, data.get(key), f"a whole number in {key!r}")

    total, cached = count("input_tokens"), count("cached_input_tokens")
    cached = min(cached, total)
    return Usage(total - cached, cache_read=cached, output_tokens=count("output_tokens"))


def _history_parts(path: str, where: str, history: list[Any]) -> tuple[Part, ...]:
    """All parts of a replacement history, flattened into one message."""
    parts: list[Part] = []
    for i, item in enumerate(history):
        expect(path, where, item, dict, f"replacement_history[{i}] object")
        if item.get("type") in ITEM_TYPES:
            parts.extend(item_parts(path, where, item))
    return tuple(parts)
