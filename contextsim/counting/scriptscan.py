"""The fast half of contextsim.counting.scripts: one class code per code point, in C-speed passes.

Python has no vectorized lookup from code points to classes: str.translate on non-ASCII
text and regular expressions both cost a per-character step of ~10-50 ns. Byte
operations are ~1 ns per byte, so the text is read as UTF-16 (every BMP character one
2-byte unit, fixed offsets, unlike UTF-8) and split into its high and low bytes:

- the high byte (a 256-code-point block) is translated to a slot X and a mask M;
- the low byte is translated to Y = cell << 2 | quarter, where the quarter is the low
  byte's top two bits and the cell one of at most eight sets of low bytes in that
  quarter (ASCII letters, digits, space, newline, punctuation..., see _cells);
- big-integer bit operations, which are bytewise here, combine them into one key byte
  per unit, K = X | (Y & M). A "quarter" block (M = 3) keeps 64-code-point resolution;
  a "full" block (M = 0x1F: Latin-1, U+FExx, and the high surrogates of planes 1-3)
  keeps the cells, fine enough for ASCII, U+00D7 and U+00F7, the variation selectors
  and the emoji planes;
- one more translation turns keys into class codes (CODES_OF) and drops low surrogates,
  so the result has one byte per code point, aligned with the str.

Code points in a key's range that do not share one class are RARE (resolved one by one
by contextsim.counting.scripts, only when present), or, where one class has at most two
exceptions, counted with str.count (SINGLETONS). The tables are built from
script_table.RANGES at import (a few ms); the tests compare every code point's class
here with script_table.range_class.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from contextsim.counting.script_table import MARK, RANGES, SCRIPTS, range_class

RARE = "rare"
"""Class of characters whose key does not decide their script (classified one by one)."""

_SCRIPT_CODE = dict(zip(SCRIPTS, b"a lygrhitzkueo", strict=True))
CODES_OF: dict[str, bytes] = {
    **{name: bytes([code]) for name, code in _SCRIPT_CODE.items()},
    MARK: b"m",
    RARE: b"x",
}
"""Class name -> the codes scan() writes for it."""

_FULL_HIGH = (0x00, 0xD8, 0xFE)
"""High bytes kept at cell resolution (slots 0, 1, 2: X = slot << 5, M = 0x1F)."""
_QUARTER_BASE = 0x60
"""First X of quarter-resolution slots (X = 0x60 + 4 * slot, M = 3)."""


def _cells() -> list[int]:
    """Y for every low byte: cell << 2 | quarter. Cells split each quarter so that full
    blocks resolve ASCII classes, U+00D7 and U+00F7, and sixteenths (for U+FExx and
    for planes 1-3, whose emoji plane starts at high surrogate U+D83C)."""
    y = []
    for lo in range(256):
        q = lo >> 6
        six = (lo >> 4) & 3
        if q == 0:
            bounds = (0x0A, 0x0B, 0x10, 0x20, 0x21, 0x30, 0x3A, 0x3C)
            cell = {0x0A: 0}.get(lo, 1) if lo < 0x10 else bisect_right(bounds, lo) - 1
        elif q == 1:
            cell = six * 2 + chr(lo).isalpha()
        elif q == 2:
            cell = six
        else:
            cell = six * 2 + (lo in (0xD7, 0xF7))
        y.append(cell << 2 | q)
    return y


_Y = _cells()
_STARTS = [first for first, _, _ in RANGES]


def _classes(first: int, last: int) -> set[str]:
    """The RANGES classes of code points first..last (gaps are "other")."""
    found: set[str] = set()
    i = max(bisect_right(_STARTS, first) - 1, 0)
    at = first
    for a, b, name in RANGES[i:]:
        if a > last:
            break
        if b < at:
            continue
        if a > at:
            found.add("other")
        found.add(name)
        at = b + 1
        if at > last:
            return found
    found.add("other")
    return found


def _span(high: int, lows: list[int]) -> list[tuple[int, int]]:
    """Code point intervals of the units high << 8 | low for `lows`, sorted (a high
    surrogate unit stands for the 1,024 astral code points it starts)."""
    if 0xDC <= high <= 0xDF or not lows:
        return []
    runs: list[tuple[int, int]] = []
    if lows[-1] - lows[0] + 1 == len(lows):  # one run of low bytes: the common case
        runs.append((lows[0], lows[-1]))
    else:
        start = prev = lows[0]
        for lo in lows[1:]:
            if lo != prev + 1:
                runs.append((start, prev))
                start = lo
            prev = lo
        runs.append((start, prev))
    if 0xD8 <= high <= 0xDB:
        base = 0x10000 + ((high - 0xD8) << 18)
        return [(base + (a << 10), base + (b << 10) + 1023) for a, b in runs]
    return [(high << 8 | a, high << 8 | b) for a, b in runs]


SINGLETONS: dict[int, tuple[str, tuple[tuple[str, str], ...]]] = {}
"""Code -> (class of its code points, ((char, class), ...) its at most two exceptions)."""


def _code(high: int, lows: list[int]) -> int:
    """The class code of the units high << 8 | low, low in `lows`: one class's code,
    a new SINGLETONS code, RARE, or 0 for low surrogates (dropped)."""
    if 0xDC <= high <= 0xDF:
        return 0
    found: set[str] = set()
    for a, b in _span(high, lows):
        found |= _classes(a, b)
    if len(found) == 1:
        return CODES_OF[found.pop()][0]
    if 0xD8 <= high <= 0xDB:
        return CODES_OF[RARE][0]
    by_class: dict[str, list[int]] = {}
    for lo in lows:
        by_class.setdefault(range_class(high << 8 | lo), []).append(high << 8 | lo)
    main = max(by_class, key=lambda name: len(by_class[name]))
    odd = tuple((chr(c), name) for name, cs in by_class.items() if name != main for c in cs)
    if len(odd) <= 2 and main in _SCRIPT_CODE and all(n in _SCRIPT_CODE for _, n in odd):
        code = 0x80 + len(SINGLETONS)
        SINGLETONS[code] = (main, odd)
        return code
    return CODES_OF[RARE][0]


def _ascii_code(lo: int) -> int:
    """The code of ASCII byte `lo`: ascii_alnum or ascii_other."""
    alnum = chr(lo).isalnum() and lo < 0x80
    return CODES_OF["ascii_alnum" if alnum else "ascii_other"][0]


def _groups(mask: int) -> dict[int, list[int]]:
    """Y & mask -> the low bytes that give it (the same for every high byte)."""
    found: dict[int, list[int]] = {}
    for lo in range(256):
        found.setdefault(_Y[lo] & mask, []).append(lo)
    return found


_GROUPS = {0x03: _groups(0x03), 0x1F: _groups(0x1F)}


def _build() -> tuple[bytes, bytes, bytes, list[tuple[int, int]]]:
    """(X table, M table, final key -> code table, the code point intervals coded RARE)."""
    x_table, m_table, final = [0] * 256, [0] * 256, [0] * 256
    rare: list[tuple[int, int]] = []
    patterns: dict[tuple[int, ...], int] = {}
    for high in range(256):
        if high in _FULL_HIGH:
            x, mask = _FULL_HIGH.index(high) << 5, 0x1F
            codes = {
                y: _ascii_code(lows[0]) if high == 0 and lows[0] < 0x80 else _code(high, lows)
                for y, lows in _GROUPS[mask].items()
            }
        else:
            quarters = tuple(_code(high, list(range(q * 64, q * 64 + 64))) for q in range(4))
            x, mask = _QUARTER_BASE + 4 * patterns.setdefault(quarters, len(patterns)), 0x03
            if x > 0xFC:
                raise RuntimeError("scriptscan: too many distinct block patterns")
            codes = dict(enumerate(quarters))
        x_table[high], m_table[high] = x, mask
        for y, code in codes.items():
            final[x | y] = code
            if code == CODES_OF[RARE][0]:
                rare += _span(high, _GROUPS[mask][y])
    return bytes(x_table), bytes(m_table), bytes(final), rare


_X, _M, _FINAL, _RARE_SPANS = _build()
_YT = bytes(_Y)
_SKIP = bytes(key for key in range(256) if not _FINAL[key])  # low surrogates: not counted
_ASCII_FINAL = bytes(_ascii_code(lo) if lo < 0x80 else 0 for lo in range(256))
_LONE = re.compile("[\ud800-\udfff]")


def _rare_class() -> str:
    """A regex character class of every code point scan() codes RARE."""
    merged: list[list[int]] = []
    for a, b in sorted(_RARE_SPANS):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return "[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in merged) + "]+"


RARE_CHARS = re.compile(_rare_class())
"""Runs of the characters scan() codes RARE."""


CHUNK = 1 << 15
"""Code points per pass: the chunk's buffers stay in cache and are reused, which makes
each pass several times faster than over a whole large text."""


def _scan(text: str) -> bytes:
    """scan() of one chunk."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_FINAL)
    try:
        units = text.encode("utf-16-le")
    except UnicodeEncodeError:  # lone surrogates: "other", like U+25A1 (a plain key)
        units = _LONE.sub("\u25a1", text).encode("utf-16-le")
    high, low = units[1::2], units[0::2]
    x = int.from_bytes(high.translate(_X), "little")
    m = int.from_bytes(high.translate(_M), "little")
    y = int.from_bytes(low.translate(_YT), "little")
    keys = (x | (y & m)).to_bytes(len(high), "little")
    return keys.translate(_FINAL, _SKIP)


def scan(text: str) -> bytes:
    """One code per code point of `text` (CODES_OF or a SINGLETONS code):
    len(scan(text)) == len(text), and scan(text)[i] classifies text[i]."""
    if len(text) <= CHUNK:
        return _scan(text)
    return b"".join(_scan(text[i : i + CHUNK]) for i in range(0, len(text), CHUNK))


_ASCII_CODES = CODES_OF["ascii_alnum"] + CODES_OF["ascii_other"]
_ORDER = [
    (CODES_OF[name], name)
    for name in ("han", "cyrillic", "latin_accented", "kana", "hangul", "emoji", "other",
                 "greek", "indic", "arabic", "hebrew", "thai", MARK, RARE)
]  # fmt: skip
"""(code, class) of the non-ASCII codes, frequent first, so that counting a chunk stops
as soon as every code point is accounted for."""


def scan_counts(text: str) -> dict[str, int]:
    """Code points of `text` per class: SCRIPTS names, MARK and RARE (zero counts may be
    missing); singleton exceptions are already resolved. ASCII is counted on the whole
    chunk, the rest on what is left once ASCII is deleted (usually much shorter)."""
    counts: dict[str, int] = {}

    def add(name: str, n: int) -> None:
        counts[name] = counts.get(name, 0) + n

    for i in range(0, len(text), CHUNK):
        chunk = text[i : i + CHUNK]
        stream = _scan(chunk)
        rest = stream.translate(None, _ASCII_CODES)
        alnum = stream.count(CODES_OF["ascii_alnum"])
        add("ascii_alnum", alnum)
        add("ascii_other", len(stream) - len(rest) - alnum)
        left = len(rest)
        for code, name in _ORDER:
            if not left:
                break
            n = rest.count(code)
            if n:
                add(name, n)
                left -= n
        for single, (main, odd) in SINGLETONS.items():
            n = rest.count(single) if left else 0
            if n:
                left -= n
                for char, name in odd:
                    k = chunk.count(char)
                    add(name, k)
                    n -= k
                add(main, n)
    return counts
