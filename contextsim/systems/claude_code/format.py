"""Claude Code session JSONL (``~/.claude/projects/<project>/<session>.jsonl``).

Each line is one record. ``user`` and ``assistant`` records carry an Anthropic message in
``message``; ``summary`` gives a title; ``system`` with subtype ``compact_boundary`` marks
a compaction. Other records (``progress``, ``file-history-snapshot``, other ``system``
subtypes, ...) are never sent to the model and are skipped; record types and content
blocks we do not know are skipped too and counted in a warning. Contracts of the result:

- One response is written as one line per content block, all with the same
  ``message.id``: they become one assistant message with usage counted once (the last
  line's, whose ``output_tokens`` is final). Lines of one response interleaved with tool
  results still join the first; consecutive tool-result lines join into one user message,
  the form in which they are sent (the API takes one user turn between two answers).
- ``isSidechain`` lines are subagents: each becomes its own run (``subagent=True``,
  ``parent_session_id`` = the session id), found by ``agentId`` when present, else by
  following ``parentUuid`` back to the subagent's first message.
- The agent whose id starts with ``acompact`` (``subagents/agent-acompact-*.jsonl``) is
  the request that wrote a compaction's summary: a run marked ``compaction_request``,
  not a subagent's work (its measured size is that of the conversation compacted).
- ``isMeta`` user lines (slash-command expansions, caveats) are kept: Claude Code sends
  them to the model, so they take room in the context. They never give a title.
- Assistant lines of model ``<synthetic>`` are written by Claude Code itself (API errors,
  interruptions): kept as the answer of a request that failed, without usage.
- The file is followed in line order; branches left by rewinding a conversation are not
  pruned.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from contextsim.ingest.base import (
    Document,
    FileEnd,
    FormatError,
    Lines,
    Names,
    ParsedFile,
    Record,
    Reopen,
    RunPiece,
    Source,
    arguments_text,
    expect,
    parse_time,
    text_of,
    token_count,
)
from contextsim.model import (
    Compaction,
    ImagePart,
    Message,
    Part,
    Rejection,
    Role,
    Run,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    refused_for_size,
)
from contextsim.systems.claude_code.attachments import attachment_text
from contextsim.systems.claude_code.rules import keeps_thinking, session_window

SKIPPED_TYPES = Names(
    {
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "ai-title",
        "custom-title",
        "last-prompt",
        "permission-mode",
    }
)
"""Record types Claude Code writes that are never sent to the model (its UI's: titles,
the last prompt typed, the permission mode)."""
CODEX_TYPES = Names({"session_meta", "response_item", "event_msg", "turn_context"})
SYNTHETIC = "<synthetic>"
COMPACTION_AGENT = "agent-acompact"
"""Run key of the agent Claude Code runs to compact (subagents/agent-acompact-*.jsonl)."""
TITLE_LENGTH = 80
FLUSH_LINES = 1_000
KEEP = 64
"""ClaudeCodeImporter.pieces hands messages over every FLUSH_LINES lines, all but each
run's last KEEP (lines that join a response or results to an earlier message come
right after it)."""
MAIN = ""
"""Run key of the main conversation; subagent keys are never empty."""
COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)
ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
# The usage fields in the order of model.Usage: input, cache read, cache write, output.
USAGE = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")


class ClaudeCodeImporter:
    name = "claude-code"
    label = "Claude Code session JSONL"

    def sniff(self, source: Source) -> bool:
        """True when a sampled record has Claude Code's shape and none is a native or
        Codex rollout record."""
        sample = [source.data] if isinstance(source, Document) else [r.data for r in source.sample]
        if not all(isinstance(d, dict) for d in sample):
            return False
        foreign = any(
            "contextsim" in d or (d.get("type") in CODEX_TYPES and "payload" in d) for d in sample
        )
        return not foreign and any(_looks_like_claude_code(d) for d in sample)

    def parse(self, source: Source) -> ParsedFile:
        """All runs of the file: the main conversation first (when it has messages), then
        one run per subagent in order of appearance. Reads the lines once."""
        builder = _Builder(source.path)
        if isinstance(source, Lines):
            for record in source:
                builder.add(record)
            warnings = list(source.warnings)
        else:
            # A one-line session is read as a JSON document: it is line 1.
            expect(source.path, "line 1", source.data, dict, "a Claude Code record object")
            builder.add(Record(1, source.data))
            warnings = []
        runs = builder.finish()
        return ParsedFile(self.name, runs, (*warnings, *builder.warnings()))

    def pieces(self, source: Lines) -> Iterator[RunPiece | FileEnd]:
        """What `parse` gives, handed over as the lines are read: every FLUSH_LINES
        lines, each run's messages but its last KEEP, so a long session is never whole
        in memory. Raises Reopen when a line adds to a message already handed over
        (then the file is to be read whole)."""
        builder = _Builder(source.path)
        numbers: dict[str, int] = {}

        def handed(keep: int) -> Iterator[RunPiece]:
            for key, messages in builder.flush(keep):
                yield RunPiece(numbers.setdefault(key, len(numbers)), messages)

        for n, record in enumerate(source, 1):
            builder.add(record)
            if n % FLUSH_LINES == 0:
                yield from handed(KEEP)
        yield from handed(0)
        facts = tuple((numbers[key], run) for key, run in builder.facts())
        yield FileEnd(self.name, facts, (*source.warnings, *builder.warnings()))


def _looks_like_claude_code(data: dict[str, Any]) -> bool:
    kind = data.get("type")
    if kind in ("user", "assistant"):
        linked = any(k in data for k in ("sessionId", "uuid", "parentUuid"))
        return linked and isinstance(data.get("message"), dict)
    if kind == "summary":
        return "leafUuid" in data
    if kind == "file-history-snapshot":
        return "snapshot" in data
    return kind in ("system", "progress", "queue-operation") and "sessionId" in data


@dataclass(slots=True)
class _Draft:
    """A message being built: later lines of the same response add parts to it."""

    role: Role
    parts: list[Part]
    source: str
    usage: Usage | None = None
    compact_summary: bool = False
    meta: bool = False
    time: float | None = None
    attachment: bool = False

    @property
    def only_tool_results(self) -> bool:
        parts = self.parts
        return self.role == "user" and bool(parts) and all(type(p) is ToolResultPart for p in parts)

    def freeze(self) -> Message:
        return Message(
            self.role,
            tuple(self.parts),
            self.usage,
            self.compact_summary,
            self.source,
            self.time,
            self.attachment,
        )


@dataclass(slots=True)
class _RunDraft:
    key: str
    session_id: str = ""
    messages: list[_Draft] = field(default_factory=list)
    responses: dict[str, int] = field(default_factory=dict)  # message.id -> its draft
    compactions: list[Compaction] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    models: Counter[str] = field(default_factory=Counter)
    sealed: bool = False  # after a compaction boundary nothing merges into older messages
    version: str = ""  # Claude Code's version, as the last line that names one says
    cwd: str = ""  # the folder it worked in, as the first line that names one says
    peak: int = 0  # the largest measured request
    measured_at: int | None = None  # a compaction agent's measured response
    flushed: int = 0  # messages handed over already (ClaudeCodeImporter.pieces)
    words: str = ""  # what the user first typed in the messages handed over, for a title
    command: str = ""  # the first slash command in them

    @property
    def size(self) -> int:
        return self.flushed + len(self.messages)

    def append(self, draft: _Draft) -> None:
        self.messages.append(draft)
        self.sealed = False


class _Builder:
    """Takes records one at a time; keeps the messages being built and, per record uuid,
    the run it went to (to follow ``parentUuid`` chains)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.runs: dict[str, _RunDraft] = {}
        self.owner: dict[str, str] = {}
        self.summaries: list[tuple[str, str]] = []  # (leafUuid, summary)
        self.unknown_types: Counter[str] = Counter()
        self.unknown_blocks: Counter[str] = Counter()

    def add(self, record: Record) -> None:
        data, kind = record.data, record.data.get("type")
        if kind == "summary" and isinstance(data.get("summary"), str):
            self.summaries.append((str(data.get("leafUuid") or ""), data["summary"]))
        elif kind == "attachment":
            self._add_attachment(record)
        elif kind not in ("user", "assistant", "system", "summary", *SKIPPED_TYPES):
            self.unknown_types[str(kind)] += 1
        elif kind in ("user", "assistant") or data.get("subtype") == "compact_boundary":
            if isinstance(data.get("uuid"), str) and data["uuid"] in self.owner:
                return  # the same record written twice (e.g. when a session is resumed)
            run = self._run_for(record)
            if kind == "assistant":
                self._add_assistant(run, record)
            elif kind == "user":
                self._add_user(run, record)
            else:
                run.compactions.append(_compaction(data, run.size))
                run.sealed = True

    def _add_attachment(self, record: Record) -> None:
        """Context the harness adds to the next request (see attachments)."""
        data = record.data
        if isinstance(data.get("uuid"), str) and data["uuid"] in self.owner:
            return
        text = attachment_text(data.get("attachment"))
        run = self._run_for(record)
        if text:
            time = parse_time(data.get("timestamp"))
            where = f"line {record.line}"
            run.append(_Draft("system", [TextPart(text)], where, time=time, attachment=True))

    def _only_the_last_is_measured(self, run: _RunDraft, record: Record) -> None:
        """A compaction agent's file is one request, the summary's; from 2.1.8x it copies
        the session's responses before it, usage and all, which the session measured
        already: only its last response keeps its usage, so nothing is counted or
        priced twice."""
        if run.measured_at is not None:
            if run.measured_at < run.flushed:
                raise Reopen(f"{self.path}: line {record.line} follows a handed-over response")
            run.messages[run.measured_at - run.flushed].usage = None
        run.measured_at = run.size

    def _run_for(self, record: Record) -> _RunDraft:
        """The run a record belongs to; remembers the record's uuid for its children."""
        data, key = record.data, MAIN
        if data.get("isSidechain") is True:
            agent = data.get("agentId")
            parent = data.get("parentUuid") or data.get("logicalParentUuid")
            if isinstance(agent, str) and agent:
                key = f"agent-{agent}"
            elif isinstance(parent, str) and self.owner.get(parent, MAIN) != MAIN:
                key = self.owner[parent]
            else:  # a subagent's first message (its parent is none or the main chain)
                key = f"sidechain-{data.get('uuid') or record.line}"
        if isinstance(data.get("uuid"), str):
            self.owner[data["uuid"]] = key
        run = self.runs.setdefault(key, _RunDraft(key))
        if not run.session_id and isinstance(data.get("sessionId"), str):
            run.session_id = data["sessionId"]
        if isinstance(data.get("version"), str):
            run.version = data["version"][:40]
        if not run.cwd and isinstance(data.get("cwd"), str):
            run.cwd = data["cwd"][:500]
        return run

    def _add_assistant(self, run: _RunDraft, record: Record) -> None:
        message = self._message(record)
        parts = self._parts(record, message.get("content"))
        model = message.get("model")
        if isinstance(model, str) and not keeps_thinking(model):
            # The API drops earlier turns' thinking from what such a model reads.
            parts = [
                replace(p, turn_only=True) if isinstance(p, ThinkingPart) else p for p in parts
            ]
        usage = None if model == SYNTHETIC else self._usage(record, message.get("usage"))
        if usage is not None:
            run.peak = max(run.peak, usage.context)
        if usage is not None and isinstance(model, str) and model:
            usage = replace(usage, model=model[:200])
        response = message.get("id") or record.data.get("requestId")
        if not isinstance(response, str):
            response = f"line {record.line}"  # no id: the line is a response of its own
        index = run.responses.get(response)
        if index is not None:
            if index < run.flushed:
                raise Reopen(f"{self.path}: line {record.line} adds to a message handed over")
            draft = run.messages[index - run.flushed]
            draft.parts.extend(parts)
            draft.usage = usage or draft.usage  # repeated usage: keep one, the final one
            return
        run.responses[response] = run.size
        if usage is not None and run.key.startswith(COMPACTION_AGENT):
            self._only_the_last_is_measured(run, record)
        if isinstance(model, str) and model and model != SYNTHETIC:
            run.models[model] += 1
        time = parse_time(record.data.get("timestamp"))
        if record.data.get("isApiErrorMessage") is True:
            reason = _api_error(record.data, parts)
            run.rejections.append(Rejection(run.size, reason, refused_for_size(reason), time))
        run.append(_Draft("assistant", parts, f"line {record.line}", usage, time=time))

    def _add_user(self, run: _RunDraft, record: Record) -> None:
        data = record.data
        parts = self._parts(record, self._message(record).get("content"))
        summary, meta = data.get("isCompactSummary") is True, data.get("isMeta") is True
        time = parse_time(data.get("timestamp"))
        draft = _Draft("user", parts, f"line {record.line}", None, summary, meta, time)
        last = run.messages[-1] if run.messages and not run.sealed else None
        if last is not None and last.only_tool_results and draft.only_tool_results:
            last.parts.extend(parts)  # results of parallel calls: one message on the wire
        else:
            run.append(draft)

    def _message(self, record: Record) -> dict[str, Any]:
        where, what = f"line {record.line}", "'message' to be an object"
        message: dict[str, Any] = expect(self.path, where, record.data.get("message"), dict, what)
        return message

    def _usage(self, record: Record, data: Any) -> Usage | None:
        if data is None:
            return None
        where = f"line {record.line}"
        expect(self.path, where, data, dict, "message.usage to be an object")
        counts = [
            token_count(self.path, where, data.get(k), f"message.usage.{k} to be a number")
            for k in USAGE
        ]
        tiers = data.get("cache_creation")
        hour = tiers.get("ephemeral_1h_input_tokens") if isinstance(tiers, dict) else None
        hour = token_count(
            self.path, where, hour, "message.usage.cache_creation.ephemeral_1h_input_tokens"
        )
        given, read, written, output = counts
        return Usage(given, read, written, output, cache_write_1h=min(hour, written))

    def _parts(self, record: Record, content: Any) -> list[Part]:
        if isinstance(content, str):
            return [TextPart(content)]
        where = f"line {record.line}"
        what = "message.content to be a string or a list of blocks"
        parts = []
        for i, block in enumerate(expect(self.path, where, content, list, what)):
            label = f"message.content[{i}]"
            expect(self.path, where, block, dict, f"{label} to be a content block object")
            part = self._part(where, label, block)
            if part is not None:
                parts.append(part)
        return parts

    def _part(self, where: str, label: str, block: dict[str, Any]) -> Part | None:
        """One content block as a part; None (counted) for a block type we do not model."""
        kind = block.get("type")

        def text(key: str, default: str | None = None) -> str:
            value = block.get(key, default)
            return str(expect(self.path, where, value, str, f"{label}.{key} to be a string"))

        if kind == "text":
            return TextPart(text("text"))
        if kind == "thinking":
            return ThinkingPart(text("thinking", ""))
        if kind == "redacted_thinking":
            return ThinkingPart("")  # encrypted: there is no text to count
        if kind == "tool_use":
            return ToolCallPart(text("id"), text("name"), arguments_text(block.get("input")))
        if kind == "tool_result":
            error = block.get("is_error") is True
            return ToolResultPart(text("tool_use_id"), text_of(block.get("content")), error)
        if kind == "image":
            source = block.get("source")
            media = source.get("media_type") if isinstance(source, dict) else None
            return ImagePart(media if isinstance(media, str) else "")
        self.unknown_blocks[str(kind)] += 1
        return None

    def finish(self) -> tuple[Run, ...]:
        """The runs built; raises FormatError when the file held no message at all."""
        main_session, drafts = self._drafts()
        return tuple(
            self._run(r, main_session, tuple(d.freeze() for d in r.messages)) for r in drafts
        )

    def flush(self, keep: int) -> Iterator[tuple[str, tuple[Message, ...]]]:
        """(run key, messages) of the messages of each run but its last `keep`, which
        are let go: with keep >= 1 nothing a later line can join is handed over, but
        for a line that adds to an older response (then Reopen is raised)."""
        for run in self.runs.values():
            cut = len(run.messages) - keep
            if cut <= 0:
                continue
            gone = run.messages[:cut]
            del run.messages[:cut]
            run.flushed += cut
            run.words, run.command = _title_words(gone, run.words, run.command)
            yield run.key, tuple(d.freeze() for d in gone)

    def facts(self) -> tuple[tuple[str, Run], ...]:
        """(run key, the run's facts, its messages left out) of every run, in order."""
        main_session, drafts = self._drafts()
        return tuple((r.key, self._run(r, main_session, ())) for r in drafts)

    def _drafts(self) -> tuple[str, list[_RunDraft]]:
        drafts = [r for r in self.runs.values() if r.size]
        if not drafts:
            problem = "no user or assistant messages found; expected Claude Code session lines"
            raise FormatError(self.path, "", problem)
        drafts.sort(key=lambda r: r.key != MAIN)  # stable: subagents keep file order
        main = self.runs.get(MAIN)
        return (main.session_id if main else ""), drafts

    def _run(self, draft: _RunDraft, main_session: str, messages: tuple[Message, ...]) -> Run:
        sub = draft.key != MAIN
        models = [m for m, _ in draft.models.most_common(1)]
        # Claude Code runs its compaction as an agent of its own (agentId acompact-...):
        # the request that wrote the summary, not a subagent doing part of the task.
        compacting = draft.key.startswith(COMPACTION_AGENT)
        title = f"compaction request of {main_session or draft.session_id}"
        model = models[0] if models else ""
        window = session_window(model, draft.version, draft.peak, draft.compactions)
        return Run(
            title=title if compacting else self._title(draft),
            messages=messages,
            format="claude-code",
            model=model,
            session_id=draft.key if sub else draft.session_id,
            # A subagents/agent-*.jsonl file has no main run but names its session.
            parent_session_id=(main_session or draft.session_id) if sub else "",
            subagent=sub,
            compactions=tuple(draft.compactions),
            rejections=tuple(draft.rejections),
            harness_version=draft.version,
            compaction_request=compacting,
            context_window=window.tokens,
            window_source=window.source,
            # The folder the session began in: its agents may work in a folder below.
            project=self._project(draft),
        )

    def _project(self, draft: _RunDraft) -> str:
        main = self.runs.get(MAIN)
        return main.cwd if main is not None and main.cwd else draft.cwd

    def _title(self, draft: _RunDraft) -> str:
        """The main run: its session summary (one whose leaf is in the run first). Any
        run: the first words the user typed, else the first slash command, else its id."""
        if draft.key == MAIN and self.summaries:
            ours = [s for leaf, s in self.summaries if self.owner.get(leaf) == MAIN]
            return _shorten((ours or [s for _, s in self.summaries])[0])
        words, command = _title_words(draft.messages, draft.words, draft.command)
        if words or command:
            return _shorten(words or command)
        return (draft.key or draft.session_id) or "Claude Code session"

    def warnings(self) -> list[str]:
        out = []
        for counter, what in ((self.unknown_types, "records"), (self.unknown_blocks, "blocks")):
            if counter:
                names = ", ".join(sorted(counter))
                out.append(f"{self.path}: ignored {counter.total()} {what} of unknown type {names}")
        return out


REASON_CHARS = 300
"""Characters of an API error's text kept as a rejection's reason."""


def _api_error(data: dict[str, Any], parts: list[Part]) -> str:
    """The reason of an API error line: its `error` kind, `apiErrorStatus` and text
    ("invalid_request 400: Prompt is too long")."""
    kind = data.get("error")
    if isinstance(kind, dict):  # some versions write {"status": ..., "message": ...}
        kind = kind.get("type") or kind.get("message") or ""
    status = data.get("apiErrorStatus")
    head = " ".join(
        str(x) for x in (kind, status) if isinstance(x, str | int) and not isinstance(x, bool) and x
    )
    text = " ".join(p.text for p in parts if isinstance(p, TextPart)).strip()
    reason = f"{head}: {text}" if head and text else head or text or "API error"
    return reason[:REASON_CHARS]


def _compaction(data: dict[str, Any], before: int) -> Compaction:
    meta = data.get("compactMetadata")
    meta = meta if isinstance(meta, dict) else {}
    pre = meta.get("preTokens")
    pre = pre if isinstance(pre, int) and not isinstance(pre, bool) else None
    return Compaction(before, pre, str(meta.get("trigger") or ""))


def _title_words(drafts: Iterable[_Draft], words: str, command: str) -> tuple[str, str]:
    """(the first words the user typed, the first slash command) once `drafts` are
    read after messages that gave `words` and `command` (reading stops at words)."""
    for draft in drafts:
        if words:
            break
        found, is_command = _user_words(draft)
        if found and not is_command:
            words = found
        command = command or found
    return words, command


def _user_words(draft: _Draft) -> tuple[str, bool]:
    """What the user typed, for a title, and whether it is a slash command (given as
    '/name args'). Markup written by Claude Code (caveats, command output) gives ''."""
    if draft.role != "user" or draft.meta or draft.compact_summary or draft.only_tool_results:
        return "", False
    text = "\n".join(p.text for p in draft.parts if isinstance(p, TextPart)).strip()
    command, args = COMMAND.search(text), ARGS.search(text)
    if command:
        return f"{command.group(1)} {args.group(1) if args else ''}".strip(), True
    return ("", False) if text.startswith("<") else (text, False)


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TITLE_LENGTH else flat[: TITLE_LENGTH - 1].rstrip() + "…"
