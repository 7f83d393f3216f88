"""Reading a log file of any format: detection (or the format chosen), then its
importer.

``parse_path(path)`` or ``parse_stream(name, stream)`` detects the format (or takes an
override) and returns a ParsedFile of runs; ``pieces_of`` hands the same over a piece at
a time. The importers are contextsim.registry.IMPORTERS, tried in its order; adding a
format is adding a system folder (contextsim.systems).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO

from contextsim.ingest.base import (
    DocumentReader,
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
    whole_pieces,
    with_source_warnings,
)
from contextsim.registry import IMPORTERS

__all__ = ["IMPORTERS", "parse_path", "parse_stream", "pieces_of", "supported"]


def supported() -> str:
    return ", ".join(IMPORTERS)


def parse_stream(name: str, stream: IO[bytes], format: str | None = None) -> ParsedFile:
    """Parse one file read from a binary stream; `name` is used in errors.

    With `format` None the format is detected; otherwise that importer is used.
    Raises FormatError naming the file, the line or JSON path, and what was expected.
    """
    _known(name, format)
    return _parsed(name, read_source(name, stream), format)


def pieces_of(
    name: str, stream: IO[bytes], format: str | None = None
) -> Iterator[RunPiece | FileEnd | Restart]:
    """What parse_stream gives, handed over a piece at a time: a JSONL file whose
    importer reads it in pieces, or a big document whose importer is a DocumentReader,
    is parsed as it is handed over, so it is never held whole (nor its runs, if the
    caller lets each piece go); any other file is parsed whole, then handed over."""
    _known(name, format)
    origin = stream.tell() if stream.seekable() else None
    source = open_source(name, stream)
    if isinstance(source, LazyDocument):
        pieces = _document_pieces(source, format)
        if pieces is not None:
            yield from _forced_pieces(pieces, format, name)
            return
        source = source.load()
    reader = _reader(source, format) if origin is not None else None
    if reader is None or not isinstance(source, Lines):
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


def _document_pieces(
    source: LazyDocument, format: str | None
) -> Iterator[RunPiece | FileEnd] | None:
    """The pieces of a big document from the first importer (the chosen one, when
    chosen) that reads documents like it a piece at a time; None when none does."""
    for importer in [IMPORTERS[format]] if format is not None else IMPORTERS.values():
        if isinstance(importer, DocumentReader) and importer.document_head.match(source.head):
            pieces = importer.document_pieces(source, _claims(importer, format))
            if pieces is not None:
                return pieces
    return None


def _claims(importer: Importer, format: str | None) -> Callable[[Source], bool]:
    return lambda left: _claimer(left, format) is importer


def _reader(
    source: Source, format: str | None
) -> Callable[[Lines], Iterator[RunPiece | FileEnd]] | None:
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
    found: Callable[[Lines], Iterator[RunPiece | FileEnd]] | None = getattr(chosen, "pieces", None)
    return found


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
        return _uncheckable(with_source_warnings(_forced(IMPORTERS[format], source), source), name)
    for importer in IMPORTERS.values():
        if importer.sniff(source):
            return _uncheckable(with_source_warnings(importer.parse(source), source), name)
    raise FormatError(
        name,
        "",
        f"could not recognise the log format; supported formats: {supported()} "
        "(choose one explicitly to see what is missing)",
    )


GUESSED = frozenset({"openai", "anthropic", "langchain"})
"""Formats a bare list of chat messages is read as: their detection is a guess."""


def _uncheckable(parsed: ParsedFile, name: str) -> ParsedFile:
    """`parsed`, with a warning when nothing in it can be checked against what was sent:
    no run has measured usage, a model or a tool result (a transcript such as Cursor's
    reads as a chat, but its requests are a guess)."""
    runs = parsed.runs
    if parsed.format not in GUESSED or not runs or any(r.model for r in runs):
        return parsed
    messages = [m for r in runs for m in r.messages]
    if any(m.usage is not None or m.tool_results for m in messages):
        return parsed
    said = (
        f"{name}: read as {parsed.format}, it holds no usage, no model and no tool "
        "results: nothing in it can be checked against what was sent, and its requests "
        "are a guess"
    )
    return replace(parsed, warnings=(*parsed.warnings, said))


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
        raise _nothing_found(source.path, importer, with_source_warnings(parsed, source).warnings)
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
