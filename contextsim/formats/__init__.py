"""Log formats: one importer per format, a registry, and automatic detection.

``parse_path(path)`` or ``parse_stream(name, stream)`` detects the format (or takes an
override) and returns a ParsedFile of runs. Adding a format means adding a module with
an importer class and one entry in IMPORTERS.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from contextsim.formats.anthropic import AnthropicImporter
from contextsim.formats.base import (
    Document,
    FileEnd,
    FormatError,
    Importer,
    LazyDocument,
    Lines,
    ParsedFile,
    Reopen,
    Restart,
    RunPiece,
    Source,
    open_source,
    read_source,
)
from contextsim.formats.claude_code import ClaudeCodeImporter
from contextsim.formats.codex import CodexImporter
from contextsim.formats.langchain import LangChainImporter
from contextsim.formats.native import NativeImporter
from contextsim.formats.openai import OpenAIImporter
from contextsim.formats.openhands import OpenHandsImporter
from contextsim.formats.otel import OTelImporter
from contextsim.formats.otel_document import read_document
from contextsim.formats.swe_agent import SWEAgentImporter

# Detection tries them in this order: the most specific markers first (formats added
# later come last, so the list printed in errors keeps its established order).
NATIVE = NativeImporter()
OTEL = OTelImporter()
IMPORTERS: dict[str, Importer] = {
    i.name: i
    for i in (
        NATIVE,
        ClaudeCodeImporter(),
        CodexImporter(),
        AnthropicImporter(),
        OpenAIImporter(),
        # Whole documents with keys no chat log has (``history`` and ``trajectory``; a
        # list of events with ``source`` and ``action`` or ``observation``): the chat
        # importers never claim them, so they come last and the list of supported formats
        # keeps its established order.
        SWEAgentImporter(),
        OpenHandsImporter(),
        # Added later, so listed last; their files have keys no other format writes
        # (``type`` beside ``data``; ``resourceSpans``).
        LangChainImporter(),
        OTEL,
    )
}

__all__ = [
    "IMPORTERS",
    "FileEnd",
    "FormatError",
    "ParsedFile",
    "Restart",
    "RunPiece",
    "parse_path",
    "parse_stream",
    "pieces_of",
]


def supported() -> str:
    return ", ".join(IMPORTERS)


def parse_stream(name: str, stream: IO[bytes], format: str | None = None) -> ParsedFile:
    """Parse one file read from a binary stream; `name` is used in errors.

    With `format` None the format is detected; otherwise that importer is used.
    Raises FormatError naming the file, the line or JSON path, and what was expected.
    """
    _known(name, format)
    return _parsed(name, read_source(name, stream), format)


PIECE = 2_000
"""Messages per piece when a file parsed whole is handed over in pieces."""
_NATIVE_HEAD = re.compile(r'\s*\{\s*"contextsim"\s*:')
_OTLP_HEAD = re.compile(r'\s*\{\s*"resourceSpans"\s*:')


def pieces_of(
    name: str, stream: IO[bytes], format: str | None = None
) -> Iterator[RunPiece | FileEnd | Restart]:
    """What parse_stream gives, handed over a piece at a time: a big native document
    is parsed as it is handed over, so it is never held whole (nor its runs, if the
    caller lets each piece go); any other file is parsed whole, then handed over."""
    _known(name, format)
    origin = stream.tell() if stream.seekable() else None
    source = open_source(name, stream)
    if isinstance(source, LazyDocument):
        if format in (None, "native") and _NATIVE_HEAD.match(source.head):
            yield from _forced_pieces(NATIVE.document_pieces(source), format, name)
            return
        if format in (None, OTEL.name) and _OTLP_HEAD.match(source.head):
            parsed = read_document(source, lambda left: _claimer(left, format) is OTEL)
            if parsed is not None:
                if format is not None and not any(run.messages for run in parsed.runs):
                    raise _nothing_found(name, OTEL, parsed.warnings)  # as _forced does
                yield from whole_pieces(_with_source_warnings(parsed, source))
                return
        source = source.load()
    reader = _reader(source, format) if origin is not None else None
    if reader is None:
        yield from whole_pieces(_parsed(name, source, format))
        return
    try:
        yield from _forced_pieces(reader(source), format, name)
    except Reopen:
        assert origin is not None
        yield Restart()
        stream.seek(origin)
        yield from whole_pieces(_parsed(name, read_source(name, stream), format))


def _forced_pieces(
    pieces: Iterator[RunPiece | FileEnd], format: str | None, name: str
) -> Iterator[RunPiece | FileEnd]:
    """`pieces`, refused as `_forced` refuses a file of the chosen format in which no
    message was found."""
    found = False
    for piece in pieces:
        if isinstance(piece, RunPiece):
            found = found or bool(piece.messages)
        elif isinstance(piece, FileEnd) and format is not None and not found:
            raise _nothing_found(name, IMPORTERS[format], piece.warnings)
        yield piece


def _reader(source: Source, format: str | None) -> Any:
    """The `pieces` method of the importer that takes this JSONL file, when it reads
    JSONL in pieces (and the file is that importer's, as parse_stream would find)."""
    if not isinstance(source, Lines):
        return None
    if format is not None:
        chosen: Importer | None = IMPORTERS[format]
        if chosen is not None and not chosen.sniff(source):
            return None
    else:
        chosen = next((i for i in IMPORTERS.values() if i.sniff(source)), None)
    return getattr(chosen, "pieces", None)


def whole_pieces(parsed: ParsedFile) -> Iterator[RunPiece | FileEnd]:
    """A file parsed whole, handed over in pieces of PIECE messages."""
    for r, run in enumerate(parsed.runs):
        for start in range(0, len(run.messages), PIECE):
            yield RunPiece(r, run.messages[start : start + PIECE])
    facts = tuple((r, replace(run, messages=())) for r, run in enumerate(parsed.runs))
    yield FileEnd(parsed.format, facts, parsed.warnings)


def _claimer(source: Source, format: str | None) -> Importer | None:
    """The importer that takes `source`: the chosen one if it does, else the first
    that does in detection order."""
    if format is not None:
        return IMPORTERS[format] if IMPORTERS[format].sniff(source) else None
    return next((i for i in IMPORTERS.values() if i.sniff(source)), None)


def _known(name: str, format: str | None) -> None:
    if format is not None and format not in IMPORTERS:
        raise FormatError(name, "", f"unknown format {format!r}; supported formats: {supported()}")


def _parsed(name: str, source: Source, format: str | None) -> ParsedFile:
    if format is not None:
        return _with_source_warnings(_forced(IMPORTERS[format], source), source)
    for importer in IMPORTERS.values():
        if importer.sniff(source):
            return _with_source_warnings(importer.parse(source), source)
    raise FormatError(
        name,
        "",
        f"could not recognise the log format; supported formats: {supported()} "
        "(choose one explicitly to see what is missing)",
    )


def _with_source_warnings(parsed: ParsedFile, source: Source | LazyDocument) -> ParsedFile:
    """What reading the file found (a document's replaced surrogates) among the
    warnings; a JSONL file's are the importer's to report, as it reads its lines."""
    if isinstance(source, Document | LazyDocument) and source.warnings:
        return replace(parsed, warnings=(*parsed.warnings, *source.warnings))
    return parsed


def _forced(importer: Importer, source: Source) -> ParsedFile:
    """The file parsed as the format the person chose. Refused when it is another
    format's file (that one claims it and the chosen one does not), or when the chosen
    importer found nothing in it: a run of skipped records is not an import."""
    if not importer.sniff(source):
        other = next((i for i in IMPORTERS.values() if i.sniff(source)), None)
        if other is not None:
            raise FormatError(
                source.path,
                "",
                f"this is not a {importer.label} file: it reads as {other.label} "
                f"(format {other.name!r}); choose that format or let it be detected",
            )
    parsed = importer.parse(source)
    if not any(run.messages for run in parsed.runs):
        raise _nothing_found(source.path, importer, parsed.warnings)
    return parsed


def _nothing_found(path: str, importer: Importer, warnings: Sequence[str]) -> FormatError:
    """The refusal of a file of the chosen format in which no message was found."""
    skipped = "; ".join(warnings[:3])
    problem = f"nothing in it is {importer.label}: no messages were found"
    return FormatError(path, "", problem + (f" ({skipped})" if skipped else ""))


def parse_path(path: str | Path, format: str | None = None) -> ParsedFile:
    """Parse the file at `path` (see parse_stream)."""
    p = Path(path)
    try:
        with p.open("rb") as stream:
            return parse_stream(str(path), stream, format)
    except OSError as exc:
        raise FormatError(str(path), "", f"cannot read the file ({exc.strerror})") from None
