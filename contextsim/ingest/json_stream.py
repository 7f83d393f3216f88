"""Reading one JSON document from a binary stream without holding its text whole.

json.loads needs the whole text: for a 200 MB one-line log, the text (two bytes a
character once one is outside Latin-1) beside the tree it builds. Here the text is
decoded a window at a time. A value that ends inside the window is decoded by the
standard library's decoder (C speed, its error messages); an array or object that does
not is entered and its members decoded one at a time, so the window holds about one
member (a message), not the file; a string or number that does not grows the window.

Errors are the standard library's, placed by line and column in the whole file.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Generator, Iterator
from typing import IO, Any

CHUNK = 1 << 20
"""Bytes decoded into the window at a time."""
MAX_DEPTH = 100
"""Arrays and objects entered one inside another, each by a Python call (deeper ones are
decoded whole, where the standard library's own limit, about 1,000 levels, applies)."""

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class JSONStreamError(ValueError):
    """Why the document cannot be read, and where (1-based line and column; 0, 0 when
    it is not a place in the text)."""

    def __init__(self, problem: str, line: int = 0, column: int = 0) -> None:
        self.problem, self.line, self.column = problem, line, column
        super().__init__(f"line {line} column {column}: {problem}" if line else problem)


class NotUTF8(JSONStreamError):
    """Bytes that are not UTF-8, at `line`, `column` (bytes) with the first bad `byte`."""

    def __init__(self, byte: int, line: int, column: int) -> None:
        super().__init__(f"not valid UTF-8 (byte 0x{byte:02x})", line, column)
        self.byte = byte


class _Window:
    """The decoded text not yet consumed, where it lies in the file, and more on demand."""

    def __init__(self, stream: IO[bytes], first: bytes) -> None:
        self.stream = stream
        self.pending = first
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.pos = 0
        self.base = 0
        """Characters of the file before `text`."""
        self.line = 1
        """The line `text` begins on; `line_start` the character where that line began."""
        self.line_start = 0
        self.eof = False
        self.escaped = False
        """Whether the text has an escaped surrogate (maybe half an emoji)."""
        self._bytes_line = 1
        self._bytes_col = 0

    def more(self, at_least: int = 0) -> bool:
        """Drop what was consumed and decode at least `at_least` (default CHUNK) more
        bytes (all that is left when fewer); False once the file is all decoded."""
        at_least = at_least or CHUNK
        if self.eof:
            return False
        self._drop()
        data = self.pending or b""
        self.pending = b""
        while len(data) < at_least:
            chunk = self.stream.read(max(CHUNK, at_least - len(data)))
            if not chunk:
                self.eof = True
                break
            data += chunk
        decoded = self._decode(data)
        if not self.base and not self.text and decoded.startswith("\ufeff"):
            decoded = decoded[1:]  # a byte order mark, which JSON text does not include
        if not self.escaped:  # an escape cut between two windows is found whole
            self.escaped = SURROGATE_ESCAPE.search(self.text[-5:] + decoded) is not None
        self.text += decoded
        return True

    def _decode(self, data: bytes) -> str:
        try:
            decoded = self.decoder.decode(data, final=self.eof)
        except UnicodeDecodeError as exc:
            # The decoder counts the bytes of a character begun in the previous read.
            seen = bytes(exc.object)
            start = max(exc.start - (len(seen) - len(data)), 0)
            before = data[:start]
            newline = before.rfind(b"\n")
            line = self._bytes_line + before.count(b"\n")
            column = start - newline if newline >= 0 else self._bytes_col + start + 1
            raise NotUTF8(seen[exc.start], line, column) from None
        newline = data.rfind(b"\n")
        self._bytes_line += data.count(b"\n")
        self._bytes_col = len(data) - newline - 1 if newline >= 0 else self._bytes_col + len(data)
        return decoded

    def _drop(self) -> None:
        if not self.pos:
            return
        gone = self.text[: self.pos]
        lines = gone.count("\n")
        if lines:
            self.line += lines
            self.line_start = self.base + gone.rfind("\n") + 1
        self.base += self.pos
        self.text = self.text[self.pos :]
        self.pos = 0

    def error(self, problem: str, at: int) -> JSONStreamError:
        """`problem` at index `at` of the text."""
        before = self.text[:at]
        lines = before.count("\n")
        start = self.base + before.rfind("\n") + 1 if lines else self.line_start
        return JSONStreamError(problem, self.line + lines, self.base + at - start + 1)

    def next_char(self) -> str:
        """The next character that is not white space ("" at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""


Path = tuple[str | int, ...]
"""Where a value is in the document: keys and indexes from the top."""
Pattern = tuple[str, ...]
"""A path whose "*" matches any index of an array."""


def load(stream: IO[bytes], first: bytes = b"") -> tuple[Any, bool]:
    """The JSON document of `first` followed by the rest of `stream`, and whether its
    text has an escaped surrogate (so lone ones may be in it). Raises JSONStreamError
    (NotUTF8 for bytes that are not UTF-8)."""
    reader = Elements(stream, first, ())
    for _ in reader:
        pass
    return reader.document, reader.escaped


class Elements:
    """Iterate over (path, element) for each element of each array whose path matches
    `split`, as it is parsed; such arrays are left empty in `document`, which is set
    (with `escaped`, as `load` gives them) once the iteration ends. So a document's
    big array is handed over one element at a time, never held whole."""

    def __init__(self, stream: IO[bytes], first: bytes, split: Pattern) -> None:
        self.document: Any = None
        self.escaped = False
        self._window = _Window(stream, first)
        self._split = split
        self._run = self._parse()

    @property
    def escaped_yet(self) -> bool:
        """Whether the text read so far has an escaped surrogate."""
        return self._window.escaped

    def __iter__(self) -> Elements:
        return self

    def __next__(self) -> tuple[Path, Any]:
        return next(self._run)

    def _parse(self) -> Iterator[tuple[Path, Any]]:
        w = self._window
        w.more()
        if w.next_char() == "":
            raise w.error("Expecting value", w.pos)
        self.document = yield from _value(w, (), self._split)
        if w.next_char() != "":
            raise w.error("Extra data", w.pos)
        self.escaped = w.escaped


def _under(path: Path, split: Pattern) -> bool:
    """Whether `path` is `split` or leads to it (a container to enter); "*" matches an
    array's index only."""
    return len(path) <= len(split) and all(
        isinstance(k, int) if p == "*" else p == k for p, k in zip(split, path, strict=False)
    )


def _value(w: _Window, path: Path, split: Pattern) -> Generator[tuple[Path, Any], None, Any]:
    start = w.next_char()
    enter = bool(split) and start in "[{" and _under(path, split)
    while not enter:
        try:
            value, end = _DECODER.raw_decode(w.text, w.pos)
        except json.JSONDecodeError as exc:
            if w.eof:
                raise w.error(exc.msg, exc.pos) from None
            if start and start in "[{" and len(path) < MAX_DEPTH:
                break
            if _settled(exc, w.text):
                raise w.error(exc.msg, exc.pos) from None
            w.more(len(w.text) - w.pos + CHUNK)  # the value goes on past the window
            continue
        except RecursionError:
            raise JSONStreamError("nested too deeply") from None
        if not w.eof and start not in '"[{' and _NUMBER_TAIL.fullmatch(w.text, end):
            w.more()  # a number (1.5e+3) or literal may go on in the next bytes
            continue
        w.pos = end
        return value
    return (yield from _container(w, start, path, split))


_NUMBER_TAIL = re.compile(r"[0-9.eE+\-a-z]*")
"""What may follow a number or literal cut at the window's end, up to that end."""
_NEAR_END = 64


def _settled(exc: json.JSONDecodeError, text: str) -> bool:
    """Whether an error is in the text already read, whatever follows the window (so
    a malformed value never makes the window grow to the end of the file)."""
    return not exc.msg.startswith("Unterminated") and exc.pos + _NEAR_END < len(text)


def _container(
    w: _Window, opening: str, path: Path, split: Pattern
) -> Generator[tuple[Path, Any], None, Any]:
    w.pos += 1
    if opening == "[":
        handed = bool(split) and len(path) == len(split) and _under(path, split)
        elements: list[Any] = []
        if w.next_char() == "]":
            w.pos += 1
            return elements
        index = 0
        while True:
            at = (*path, index)
            element = yield from _value(w, at, split)
            if handed:
                yield at, element
            else:
                elements.append(element)
            index += 1
            if _after_member(w, "]"):
                return elements
    members: dict[str, Any] = {}
    found = w.next_char()
    if found == "}":
        w.pos += 1
        return members
    while True:
        if found != '"':
            raise w.error("Expecting property name enclosed in double quotes", w.pos)
        key = yield from _value(w, (), ())
        if key in members and split and _under((*path, key), split):
            # json.loads keeps the last of a repeated key; the elements of the first
            # were handed over already, and cannot be taken back.
            raise w.error(f"the key {key!r} is repeated in this object", w.pos)
        if w.next_char() != ":":
            raise w.error("Expecting ':' delimiter", w.pos)
        w.pos += 1
        members[key] = yield from _value(w, (*path, key), split)
        if _after_member(w, "}"):
            return members
        found = w.next_char()


def _after_member(w: _Window, closing: str) -> bool:
    """Step over the "," after a member (False) or the closing bracket (True)."""
    found = w.next_char()
    if found == ",":
        w.pos += 1
        return False
    if found == closing:
        w.pos += 1
        return True
    raise w.error("Expecting ',' delimiter", w.pos)
