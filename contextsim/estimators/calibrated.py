"""Calibrated estimators: a linear model of a real tokenizer's counts, per script, fast.

The model reads the text's UTF-8 bytes as pairs (byte i, byte i + 1), each byte put in
one of 16 classes for its own role (CUR: ASCII lower and upper case letters, digits,
spaces, newlines, punctuation, continuation bytes, and the lead bytes of accented Latin,
Greek, Cyrillic, Hebrew, Arabic, Indic, CJK, Hangul and everything else) and one of 16
for its role as the next byte (NEXT: what follows a character, and for continuation
bytes which part of a lead byte's block the character is in). Every feature of the
model (FEATURES) is a count of some of those 256 pairs: characters per script (lead
bytes; Thai and emoji told apart from Indic and other symbols by their second byte),
words per script (a space, newline, digit or punctuation followed by a script's lead
byte), ASCII words, numbers and punctuation runs (a class followed by another), newline
runs, indented lines, upper case letters, and the seams of words that mix ASCII with
accented letters (Hungarian "megkülönböztetni" costs more than an ASCII word).

So the estimate is a sum over byte pairs of a per-pair weight: the coefficients fitted
by bench/fit_calibration.py (calibration.json) are folded into a 256-entry table of
weights in 1/QUANTUM token units, and counting is a few C passes over the bytes per
64 KB chunk: translate to class nibbles, join each byte's class with the next byte's
through big-integer masks and a shift, translate pairs to weights, and add the weights
with zlib.adler32 (exact while a slice's sum stays below 65521). No Python loop runs
per character. Accuracy and speed are measured by ``python bench/run.py estimators``.

These byte classes approximate contextsim.scripts' scripts at UTF-8 lead-byte
resolution (about 64 code points for 2-byte characters, 4,096 or more for longer
ones): scripts.count_by_script is exact but costs more than the estimate may.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable
from pathlib import Path

CONSTANTS = Path(__file__).with_name("calibration.json")
"""The fitted coefficients, written by bench/fit_calibration.py."""

CHUNK = 1 << 16
"""Bytes per pass: small enough to stay in cache and reuse memory between chunks."""

# Byte classes. CUR: the byte's own role.
LOWER, UPPER, DIGIT, SPACE, NEWLINE, PUNCT, CONT, LATIN = range(8)
GREEK, CYRILLIC, HEBREW, ARABIC, INDIC, CJK, HANGUL, OTHER = range(8, 16)
# NEXT: the role of the byte after it.
N_LETTER, N_DIGIT, N_SPACE, N_NEWLINE, N_PUNCT, C_LOW, C_9X, C_HIGH = range(8)
N_LATIN, N_GREEK, N_CYRILLIC, N_HEBREW, N_ARABIC, N_INDIC, N_HANGUL, N_OTHER = range(8, 16)

_LEADS = (
    (0xC3, 0xCB, LATIN, N_LATIN),  # U+00C0-U+02FF
    (0xE1, 0xE1, LATIN, N_LATIN),  # U+1000-U+1FFF, mostly Vietnamese and Greek extended
    (0xCE, 0xCF, GREEK, N_GREEK),  # U+0380-U+03FF
    (0xD0, 0xD4, CYRILLIC, N_CYRILLIC),  # U+0400-U+053F
    (0xD6, 0xD7, HEBREW, N_HEBREW),  # U+0580-U+05FF
    (0xD8, 0xDB, ARABIC, N_ARABIC),  # U+0600-U+06FF
    (0xE0, 0xE0, INDIC, N_INDIC),  # U+0800-U+0FFF: Indic, and Thai from second byte B8
    (0xE3, 0xE9, CJK, N_OTHER),  # U+3000-U+9FFF: CJK punctuation, kana, Han
    (0xEA, 0xED, HANGUL, N_HANGUL),  # U+A000-U+DFFF, mostly Hangul syllables
)


def _classes(byte: int) -> tuple[int, int]:
    """(CUR, NEXT) class of one UTF-8 byte."""
    char = chr(byte)
    if byte < 0x80:
        if char.isalpha():
            return (UPPER if char.isupper() else LOWER), N_LETTER
        if char.isdigit():
            return DIGIT, N_DIGIT
        if char in " \t\v\f":
            return SPACE, N_SPACE
        if char in "\r\n":
            return NEWLINE, N_NEWLINE
        return PUNCT, N_PUNCT
    if byte < 0xC0:  # continuation: which part of its lead byte's block
        return CONT, (C_9X if 0x98 <= byte <= 0x9F else C_HIGH if byte >= 0xB8 else C_LOW)
    for first, last, cur, nxt in _LEADS:
        if first <= byte <= last:
            return cur, nxt
    return OTHER, N_OTHER


_CLASS = [_classes(b) for b in range(256)]
_NONLETTER = (SPACE, NEWLINE, PUNCT, DIGIT)
_LETTER = (LOWER, UPPER)

Pair = Callable[[int, int], bool]
FEATURES: dict[str, Pair] = {
    "ascii_letters": lambda c, n: c in _LETTER,
    "ascii_upper": lambda c, n: c == UPPER,
    "ascii_words": lambda c, n: c in _LETTER and n != N_LETTER,
    "digits": lambda c, n: c == DIGIT,
    "numbers": lambda c, n: c == DIGIT and n != N_DIGIT,
    "spaced_numbers": lambda c, n: c == SPACE and n == N_DIGIT,
    "punctuation": lambda c, n: c == PUNCT,
    "punctuation_runs": lambda c, n: c == PUNCT and n != N_PUNCT,
    "newline_runs": lambda c, n: c == NEWLINE and n != N_NEWLINE,
    "indented_lines": lambda c, n: c == NEWLINE and n == N_SPACE,
    "latin": lambda c, n: c == LATIN,
    "latin_words": lambda c, n: c in _NONLETTER and n == N_LATIN,
    "latin_after_ascii": lambda c, n: c in _LETTER and n == N_LATIN,
    "ascii_after_multibyte": lambda c, n: c == CONT and n == N_LETTER,
    "greek": lambda c, n: c == GREEK,
    "greek_words": lambda c, n: c in _NONLETTER and n == N_GREEK,
    "cyrillic": lambda c, n: c == CYRILLIC,
    "cyrillic_words": lambda c, n: c in _NONLETTER and n == N_CYRILLIC,
    "hebrew": lambda c, n: c == HEBREW,
    "hebrew_words": lambda c, n: c in _NONLETTER and n == N_HEBREW,
    "arabic": lambda c, n: c == ARABIC,
    "arabic_words": lambda c, n: c in _NONLETTER and n == N_ARABIC,
    "indic": lambda c, n: c == INDIC and n != C_HIGH,
    "indic_words": lambda c, n: c in _NONLETTER and n == N_INDIC,
    "thai": lambda c, n: c == INDIC and n == C_HIGH,
    "cjk": lambda c, n: c == CJK,
    "hangul": lambda c, n: c == HANGUL,
    "hangul_words": lambda c, n: c in _NONLETTER and n == N_HANGUL,
    "emoji": lambda c, n: c == OTHER and n == C_9X,
    "other": lambda c, n: c == OTHER and n != C_9X,
}
"""Feature name -> which (CUR class, NEXT class) pairs it counts."""

MEMBERS: dict[str, tuple[int, ...]] = {
    name: tuple(key for key in range(256) if pred(key >> 4, key & 15))
    for name, pred in FEATURES.items()
}
"""Feature name -> the pair keys (CUR << 4 | NEXT) it counts."""

_TABLE = bytes(cur << 4 | nxt for cur, nxt in _CLASS)
_HIGH = int.from_bytes(b"\xf0" * (CHUNK + 2), "big")
_LOW = int.from_bytes(b"\x0f" * (CHUNK + 2), "big")


def _pair_keys(data: bytes, last: bool) -> bytes:
    """Key of each byte pair of `data` (at most CHUNK + 1 bytes): byte j of the result,
    for j in 1..len(data) - 1 (or len(data) when `last`, the text's end standing for a
    newline), is CUR(data[j - 1]) << 4 | NEXT(data[j])."""
    if last:
        data += b"\n"
    z = int.from_bytes(data.translate(_TABLE), "big")
    return ((z & _HIGH) | ((z << 8) & _LOW)).to_bytes(len(data) + 1, "big")


def _chunks(text: str) -> list[tuple[bytes, int]]:
    """(pair keys, number of pairs) per CHUNK of the UTF-8 bytes of `text`."""
    data = text.encode("utf-8", "surrogatepass")
    out = []
    for start in range(0, len(data), CHUNK):
        last = start + CHUNK >= len(data)
        keys = _pair_keys(data[start : start + CHUNK + 1], last)
        out.append((keys, min(CHUNK, len(data) - start)))
    return out


def pair_counts(text: str) -> list[int]:
    """How many byte pairs of `text` have each key 0..255 (for fitting and tests)."""
    counts = [0] * 256
    for keys, pairs in _chunks(text):
        for key in keys[1 : pairs + 1]:
            counts[key] += 1
    return counts


def features(text: str) -> dict[str, int]:
    """The model's features of `text` (FEATURES), from its pair counts."""
    counts = pair_counts(text)
    return {name: sum(counts[k] for k in keys) for name, keys in MEMBERS.items()}


def pair_weights(coefficients: dict[str, float]) -> list[float]:
    """Tokens per byte pair, by key, for a model's coefficients (tokens per feature)."""
    weights = [0.0] * 256
    for name, coefficient in coefficients.items():
        for key in MEMBERS[name]:
            weights[key] += coefficient
    return weights


class Calibrated:
    """A linear model of a tiktoken encoding's counts (see the module docstring)."""

    QUANTUM = 64
    """Weight units per token in the pair table (weights round to 1/64 token)."""

    def __init__(self, name: str, label: str, coefficients: dict[str, float]) -> None:
        self.name = name
        self.label = label
        self.coefficients = dict(coefficients)
        exact = pair_weights(self.coefficients)
        top = max(exact)
        self.quantum = min(self.QUANTUM, math.floor(255 / top)) if top > 0 else self.QUANTUM
        quantized = [round(w * self.quantum) for w in exact]
        self._weights = bytes(quantized)
        self._slice = max(65519 // max(max(quantized), 1), 1)  # adler32 stays exact

    def count(self, text: str) -> int:
        """Estimated tokens in `text` (>= 0; 0 for the empty string)."""
        if not text:
            return 0
        total = 0
        step = self._slice
        for keys, pairs in _chunks(text):
            view = memoryview(keys.translate(self._weights))
            for i in range(1, pairs + 1, step):  # adler32's low half is 1 + sum mod 65521
                total += (zlib.adler32(view[i : min(i + step, pairs + 1)]) & 0xFFFF) - 1
        return math.ceil(total / self.quantum)


def load(path: Path = CONSTANTS) -> dict[str, dict[str, object]]:
    """The fitted constants: model name -> {"encoding", "coefficients", ...}."""
    found: dict[str, dict[str, object]] = json.loads(path.read_text())
    return found


def calibrated_estimators(path: Path = CONSTANTS) -> list[Calibrated]:
    """The calibrated estimators of the constants file, e.g. calibrated-o200k."""
    out = []
    for model, entry in load(path)["models"].items():  # type: ignore[union-attr]
        coefficients = {str(k): float(v) for k, v in dict(entry["coefficients"]).items()}
        label = f"calibrated per script ({entry['encoding']})"
        out.append(Calibrated(f"calibrated-{model}", label, coefficients))
    return out
