"""What every importer shares: the protocol, errors, and reading JSON or JSONL safely.

An importer turns one file into runs. Files are read as a stream: a JSONL file is
decoded line by line, never held whole in memory; a JSON document is parsed once.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import IO, Any, Protocol, runtime_checkable

from contextsim.ingest import json_stream
from contextsim.model import Message, Run

SNIFF_LINES = 20
"""How many JSONL records format detection looks at."""


class FormatError(ValueError):
    """Bad input: names the file, where in it (line or JSON path) and what was expected."""

    def __init__(self, path: str, where: str, problem: str) -> None:
        self.path = path
        self.where = where
        self.problem = problem
        super().__init__(f"{path}: {where}: {problem}" if where else f"{path}: {problem}")


@dataclass(frozen=True, slots=True)
class Record:
    """One JSONL record and the 1-based line it was read from."""

    line: int
    data: Any


@dataclass(slots=True)
class Lines:
    """A JSONL file being read: `sample` holds the first records, `rest` the others."""

    path: str
    sample: list[Record]
    rest: Iterator[Record]
    warnings: list[str] = field(default_factory=list)

    def __iter__(self) -> Iterator[Record]:
        yield from self.sample
        yield from self.rest


@dataclass(frozen=True, slots=True)
class Document:
    """A JSON file parsed whole; `warnings` says what reading it changed."""

    path: str
    data: Any
    warnings: tuple[str, ...] = ()


LAZY_BYTES = 16 << 20
"""A document bigger than this (from a seekable stream) is not parsed up front: an
importer that can takes it an array at a time (LazyDocument)."""


@dataclass(slots=True)
class LazyDocument:
    """A JSON document too big to parse before it is known who takes it: read from
    `stream` (seekable; the document begins at `start`) whole by `load`, or an array's
    elements at a time by `elements`. `head` is its first characters, for detection."""

    path: str
    stream: IO[bytes]
    start: int
    head: str
    warnings: list[str] = field(default_factory=list)

    def load(self) -> Document:
        """The document parsed whole."""
        self.stream.seek(self.start)
        return _document(self.path, b"", self.stream)

    def elements(self, split: json_stream.Pattern) -> Iterator[tuple[json_stream.Path, Any]]:
        """(path, element) of each element of the arrays `split` names, then ((), the
        document with those arrays empty); FormatError on bad input."""
        self.stream.seek(self.start)
        count = 0
        with _json_errors(self.path):
            reader = json_stream.Elements(self.stream, b"", split)
            for at, element in reader:
                if reader.escaped_yet:
                    element, n = without_lone_surrogates(element)
                    count += n
                yield at, element
        document = reader.document
        if reader.escaped:
            document, n = without_lone_surrogates(document)
            count += n
        if count:
            self.warnings.append(_surrogates_said(self.path, "$", count))
        yield (), document


Source = Lines | Document


@dataclass(frozen=True, slots=True)
class RunPiece:
    """Messages of one of a file's runs, in order, after those of its earlier pieces;
    `run` numbers the file's runs in the order their first piece came."""

    run: int
    messages: tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class Restart:
    """Forget every piece handed over so far: the file is handed over again, from its
    start (an importer reading in pieces met a line that changes one handed over)."""


class Reopen(Exception):
    """Raised by an importer reading in pieces when a line changes a message it handed
    over already: the file must be read whole instead."""


@dataclass(frozen=True, slots=True)
class FileEnd:
    """The end of a file read in pieces: its format, warnings, and each run's facts (a
    Run whose messages are its pieces', left out here), in the order the runs are to be
    shown, each with the number its pieces carry."""

    format: str
    runs: tuple[tuple[int, Run], ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ParsedFile:
    format: str
    runs: tuple[Run, ...]
    warnings: tuple[str, ...] = ()


class Importer(Protocol):
    """One log format. `sniff` looks at a sample; `parse` reads all of it.

    Optional, found by contextsim.ingest.detect when present: `pieces(source: Lines)`
    hands a JSONL file over as it is read (raising Reopen when it must be read whole),
    and a DocumentReader's `document_pieces` reads a big JSON document a piece at a time.
    """

    name: str
    label: str

    def sniff(self, source: Source) -> bool: ...

    def parse(self, source: Source) -> ParsedFile: ...


@runtime_checkable
class DocumentReader(Protocol):
    """An importer that reads a JSON document too big to parse whole (LazyDocument)."""

    document_head: re.Pattern[str]
    """Matches the start of a document this importer reads so (LazyDocument.head)."""

    def document_pieces(
        self, source: LazyDocument, claims: Callable[[Source], bool]
    ) -> Iterator[RunPiece | FileEnd] | None:
        """What `parse` would give of the document, a piece at a time; None when it is
        not one to read so (the caller then loads it whole). `claims` tells whether
        what is left of the document once its big arrays are taken out is still this
        importer's, as detection would decide."""
        ...


PIECE = 2_000
"""Messages per piece when a file parsed whole is handed over in pieces."""


def whole_pieces(parsed: ParsedFile) -> Iterator[RunPiece | FileEnd]:
    """A file parsed whole, handed over in pieces of PIECE messages."""
    for r, run in enumerate(parsed.runs):
        for start in range(0, len(run.messages), PIECE):
            yield RunPiece(r, run.messages[start : start + PIECE])
    facts = tuple((r, replace(run, messages=())) for r, run in enumerate(parsed.runs))
    yield FileEnd(parsed.format, facts, parsed.warnings)


def with_source_warnings(parsed: ParsedFile, source: Source | LazyDocument) -> ParsedFile:
    """What reading the file found (a document's replaced surrogates) among the
    warnings; a JSONL file's are the importer's to report, as it reads its lines."""
    if isinstance(source, Document | LazyDocument) and source.warnings:
        return replace(parsed, warnings=(*parsed.warnings, *source.warnings))
    return parsed


def _decode_line(path: str, number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            path,
            f"line {number}",
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
            "expected UTF-8 text",
        ) from None


def _records(path: str, stream: Iterable[bytes], warnings: list[str]) -> Iterator[Record]:
    number = 0
    pending: tuple[int, str] | None = None
    for raw in stream:
        number += 1
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        text = _decode_line(path, number, raw)
        if not text or text.isspace():  # no copy of a long line, as strip() made
            continue
        if pending is not None:
            yield _parse_record(path, *pending, warnings)
        pending = (number, text)
    if pending is None:
        return
    line, text = pending
    try:
        yield _parse_record(path, line, text, warnings)
    except FormatError:
        if text.endswith("\n"):
            raise
        # A log copied while its writer was still appending ends mid-record: keep the rest.
        warnings.append(f"{path}: line {line}: incomplete last line skipped")


SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(data: Any) -> tuple[Any, int]:
    """`data` with every lone surrogate (half of an emoji cut by a JavaScript writer:
    not text, and no database or tokenizer takes it) replaced by U+FFFD, and how many
    there were. Walks without recursion, so no depth is too deep."""
    count = 0

    def clean(text: str) -> str:
        nonlocal count
        fixed, n = LONE_SURROGATE.subn("\ufffd", text)
        count += n
        return fixed

    root = [data]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        holder, key = stack.pop()
        value = holder[key]
        if isinstance(value, str):
            holder[key] = clean(value)
        elif isinstance(value, list):
            stack.extend((value, i) for i in range(len(value)))
        elif isinstance(value, dict):
            for k in list(value):
                if isinstance(k, str) and LONE_SURROGATE.search(k):
                    value[clean(k)] = value.pop(k)
            stack.extend((value, k) for k in value)
    return root[0], count


def _surrogates_said(path: str, where: str, count: int) -> str:
    return f"{path}: {where}: {count} lone surrogate(s) (half an emoji) replaced with U+FFFD"


def _parse_record(path: str, line: int, text: str, warnings: list[str] | None = None) -> Record:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(
            path,
            f"line {line}",
            f"invalid JSON ({exc.msg} at column {exc.colno}); expected one JSON object per line",
        ) from None
    except (RecursionError, ValueError) as exc:
        raise FormatError(path, f"line {line}", _unreadable(exc)) from None
    if not isinstance(data, dict):
        raise FormatError(
            path, f"line {line}", f"expected a JSON object, found {type(data).__name__}"
        )
    if SURROGATE_ESCAPE.search(text):
        data, count = without_lone_surrogates(data)
        if count and warnings is not None:
            warnings.append(_surrogates_said(path, f"line {line}", count))
    return Record(line, data)


FIRST_LINE = 8 << 20
"""Bytes of the first line read to tell JSONL from a document: a longer first line is
read as (the start of) one JSON document."""


def read_source(path: str, stream: IO[bytes]) -> Source:
    """Read `stream` as JSONL when its first line is a whole JSON object and more lines
    follow; otherwise as one JSON document. Raises FormatError on empty or broken input.
    A document is parsed from the stream (contextsim.ingest.json_stream): its text is
    never held whole, so a 200 MB one-line file costs about its tree.
    """
    source = open_source(path, stream)
    return source.load() if isinstance(source, LazyDocument) else source


def open_source(path: str, stream: IO[bytes]) -> Source | LazyDocument:
    """As read_source, but a document over LAZY_BYTES from a seekable stream is left
    unparsed (LazyDocument), for an importer that reads it an array at a time."""
    origin = stream.tell() if stream.seekable() else None
    head = stream.readline(FIRST_LINE)
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    while head and not head.strip():
        head = stream.readline(FIRST_LINE)
    if not head:
        raise FormatError(path, "", "the file is empty; expected JSON or JSONL")
    whole = head.endswith(b"\n")
    second = stream.readline(FIRST_LINE) if whole else b""
    while second and not second.strip():
        second = stream.readline(FIRST_LINE)
    jsonl = bool(second) and _is_object_line(path, head)
    if jsonl and len(second) == FIRST_LINE and not second.endswith(b"\n"):
        second += stream.readline()  # a long second record of a JSONL file, whole
    if not jsonl:
        if origin is not None and _left(stream) > LAZY_BYTES:
            start = (head + second)[:4096].decode(errors="replace")
            return LazyDocument(path, stream, origin, start)
        return _document(path, head + second, stream)
    warnings: list[str] = []
    rest = _records(path, _chain(head, second, stream), warnings)
    sample = [r for _, r in zip(range(SNIFF_LINES), rest, strict=False)]
    return Lines(path, sample, rest, warnings)


def _left(stream: IO[bytes]) -> int:
    """Bytes of a seekable stream after its position (where it is left)."""
    here = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(here)
    return end - here


def _is_object_line(path: str, line: bytes) -> bool:
    """Whether `line` is a whole JSON object (the first line of a JSONL file)."""
    text = _decode_line(path, 1, line)  # not UTF-8: said at once, with the column
    try:
        return isinstance(json.loads(text), dict)
    except (RecursionError, ValueError):  # JSONDecodeError is a ValueError
        return False


def _chain(head: bytes, second: bytes, stream: IO[bytes]) -> Iterator[bytes]:
    yield head
    yield second
    # readline, not iteration: some file wrappers (Django's File) split lines on "\r" too.
    yield from iter(stream.readline, b"")


def _document(path: str, first: bytes, stream: IO[bytes]) -> Document:
    """The JSON document of `first` and the rest of `stream`."""
    with _json_errors(path):
        data, escaped = json_stream.load(stream, first)
    if not escaped:
        return Document(path, data)
    data, count = without_lone_surrogates(data)
    return Document(path, data, (_surrogates_said(path, "$", count),) if count else ())


@contextmanager
def _json_errors(path: str) -> Iterator[None]:
    """json_stream's errors as FormatErrors naming the file and the place."""
    try:
        yield
    except json_stream.NotUTF8 as exc:
        raise FormatError(
            path,
            f"line {exc.line}",
            f"not valid UTF-8 (byte 0x{exc.byte:02x} at column {exc.column}); expected UTF-8 text",
        ) from None
    except json_stream.JSONStreamError as exc:
        if not exc.line:
            raise FormatError(path, "line 1", _unreadable(RecursionError())) from None
        raise FormatError(
            path,
            f"line {exc.line}",
            f"invalid JSON ({exc.problem} at column {exc.column}); expected a JSON document "
            "or one JSON object per line",
        ) from None
    except ValueError as exc:  # a number past the standard library's digit limit
        if isinstance(exc, FormatError):
            raise
        raise FormatError(path, "line 1", _unreadable(exc)) from None


def _unreadable(exc: BaseException) -> str:
    """Why valid-looking JSON could not be read: nesting or a number past the limits."""
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply to read (over about 1,000 levels)"
    return f"a number too long to read ({str(exc).split(';')[0]})"


class Names(frozenset[str]):
    """A set of record, item or block type names. Asked about a value that is no name (a
    list or an object where a malformed log has its type), it answers False instead of
    raising TypeError (unhashable)."""

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and frozenset.__contains__(self, value)


MAX_TOKENS_LOGGED = 10**12
"""Token counts from 10^12 on are not counts of anything sent to a model."""


def token_count(path: str, where: str, value: Any, what: str) -> int:
    """A logged token count: a whole number from 0 to MAX_TOKENS_LOGGED (absent or null:
    0); FormatError naming `where` otherwise."""
    if value is None:
        return 0
    count: int = expect(path, where, value, int, what)
    if not 0 <= count < MAX_TOKENS_LOGGED:
        raise FormatError(path, where, f"expected {what} from 0 to 10^12, got {count:,}")
    return count


def expect(path: str, where: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    """Return `value` if it is of `kind`, else raise a FormatError naming `where`."""
    if isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, float)):
        return value
    found = "nothing" if value is None else type(value).__name__
    raise FormatError(path, where, f"expected {what}, found {found}")


def text_of(value: Any) -> str:
    """Text of a tool result or message body that may be a string, a list of blocks or
    any JSON value (kept as its JSON text so nothing is lost)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        pieces: list[str] = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                pieces.append(item["text"])
            elif isinstance(item, str):
                pieces.append(item)
            elif isinstance(item, dict) and item.get("type") == "image":
                continue
            else:
                pieces.append(json.dumps(item, ensure_ascii=False))
        return "\n".join(pieces)
    return json.dumps(value, ensure_ascii=False)


def arguments_text(value: Any) -> str:
    """Tool-call arguments as the JSON text a model would have produced."""
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


def without_unsent_tail(messages: list[Message]) -> list[Message]:
    """`messages` up to the last assistant message: for a log that shows the agent had
    finished there (a finish action, a call count that says so), what came after it
    (the last action's output) was never sent, so no request is pending."""
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return messages[: last + 1] if last >= 0 else messages


SECONDS_BELOW = 1e11
"""Seconds since the epoch stay below this until the year 5138: a larger number is in
milliseconds, microseconds or nanoseconds."""


def parse_time(value: Any) -> float | None:
    """A log's timestamp as seconds since the Unix epoch (UTC): an ISO 8601 string (a
    trailing Z, or no zone, is UTC) or a number of seconds, milliseconds, microseconds
    or nanoseconds. None for anything else, so a bad timestamp never fails an import."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an int of hundreds of digits
            return None
        for _ in range(3):
            if abs(number) >= SECONDS_BELOW:
                number /= 1000
        return number if math.isfinite(number) and 0 < number < 1e10 else None
    if not isinstance(value, str) or not 10 <= len(value) <= 40:
        return None
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def iso_time(seconds: float) -> str:
    """Seconds since the epoch as ISO 8601 UTC text, to the millisecond."""
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
