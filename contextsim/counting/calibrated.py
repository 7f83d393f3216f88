"""Calibrated estimators: a linear model of a real tokenizer's counts, per script, fast.

The model reads the text's UTF-8 bytes as pairs (byte i, byte i + 1), each byte put in
one of 16 classes for its own role (CUR: ASCII letters, digits, spaces, newlines,
punctuation, continuation bytes, and the lead bytes of accented Latin, Greek, Cyrillic,
Hebrew, Arabic, Indic, kana and CJK punctuation, Han, Hangul and everything else) and
one of 16 for its role as the next byte (NEXT: lower or upper case letter, digit...,
the script of the next character, and for continuation bytes which part of a lead
byte's block the character is in: emoji, Thai, Cyrillic capitals). Every feature of the
model (FEATURES) is a count of some of those 256 pairs: characters per script (lead
bytes; Thai and emoji told apart from Indic and other symbols by their second byte),
words per script (a space, newline, digit or punctuation followed by a script's lead
byte), kana apart from Han (Japanese kanji cost more than Chinese hanzi), ASCII words,
numbers and punctuation runs (a class followed by another), newline runs, indented
lines, upper case ASCII and Cyrillic letters (all-caps words cost more), and the seams
of words that mix ASCII with accented letters (Hungarian "megkülönböztetni" costs more
than an ASCII word).

So the estimate is a sum over byte pairs of a per-pair weight: the coefficients fitted
by bench/fit_calibration.py (calibration.json) are folded into a 256-entry table of
weights in 1/QUANTUM token units, and counting is a few C passes over the bytes per
64 KB chunk: translate to class nibbles, join each byte's class with the next byte's
through big-integer masks and a shift, translate pairs to weights, and add the weights
with zlib.adler32 (exact while a slice's sum stays below 65521). No Python loop runs
per character. Accuracy and speed are measured by ``python bench/run.py estimators``.

These byte classes approximate contextsim.counting.scripts' scripts at UTF-8 lead-byte
resolution (about 64 code points for 2-byte characters, 4,096 or more for longer
ones): scripts.count_by_script is exact but costs more than the estimate may.
"""

from __future__ import annotations

import json
import math
import warnings
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

CONSTANTS = Path(__file__).with_name("calibration.json")
"""The fitted coefficients, written by bench/fit_calibration.py."""

CHUNK = 1 << 16
"""Bytes per pass: small enough to stay in cache and reuse memory between chunks."""

# Byte classes. CUR: the byte's own role.
LETTER, DIGIT, SPACE, NEWLINE, PUNCT, CONT, LATIN, GREEK = range(8)
CYRILLIC, HEBREW, ARABIC, INDIC, KANA, HAN, HANGUL, OTHER = range(8, 16)
# NEXT: the role of the byte after it. Continuation bytes are split where lead bytes'
# blocks change meaning: 98-9F (emoji after F0 and E2), B8-BF (Thai after E0), and
# 90-97 with A0-AF, where Cyrillic capitals are after D0 (all-caps words cost more).
N_LOWER, N_UPPER, N_DIGIT, N_SPACE, N_NEWLINE, N_PUNCT, C_LOW, C_CAP = range(8)
C_9X, C_HIGH, N_LATIN, N_GREEK, N_CYRILLIC, N_ARABIC, N_INDIC, N_OTHER = range(8, 16)

_LEADS = (
    (0xC3, 0xCB, LATIN, N_LATIN),  # U+00C0-U+02FF
    (0xE1, 0xE1, LATIN, N_LATIN),  # U+1000-U+1FFF, mostly Vietnamese and Greek extended
    (0xCE, 0xCF, GREEK, N_GREEK),  # U+0380-U+03FF
    (0xD0, 0xD4, CYRILLIC, N_CYRILLIC),  # U+0400-U+053F
    (0xD6, 0xD7, HEBREW, N_OTHER),  # U+0580-U+05FF
    (0xD8, 0xDB, ARABIC, N_ARABIC),  # U+0600-U+06FF
    (0xE0, 0xE0, INDIC, N_INDIC),  # U+0800-U+0FFF: Indic, and Thai from second byte B8
    (0xE3, 0xE3, KANA, N_OTHER),  # U+3000-U+3FFF: CJK punctuation, kana (and rarer)
    (0xE4, 0xE9, HAN, N_OTHER),  # U+4000-U+9FFF: Han
    (0xEA, 0xED, HANGUL, N_OTHER),  # U+A000-U+DFFF, mostly Hangul syllables
)


def _classes(byte: int) -> tuple[int, int]:
    """(CUR, NEXT) class of one UTF-8 byte."""
    char = chr(byte)
    if byte < 0x80:
        if char.isalpha():
            return LETTER, (N_UPPER if char.isupper() else N_LOWER)
        if char.isdigit():
            return DIGIT, N_DIGIT
        if char in " \t\v\f":
            return SPACE, N_SPACE
        if char in "\r\n":
            return NEWLINE, N_NEWLINE
        return PUNCT, N_PUNCT
    if byte < 0xC0:  # continuation: which part of its lead byte's block
        if 0x98 <= byte <= 0x9F:
            return CONT, C_9X
        if byte >= 0xB8:
            return CONT, C_HIGH
        return CONT, (C_CAP if 0x90 <= byte <= 0xAF else C_LOW)
    for first, last, cur, nxt in _LEADS:
        if first <= byte <= last:
            return cur, nxt
    return OTHER, N_OTHER


_CLASS = [_classes(b) for b in range(256)]
_NONLETTER = (SPACE, NEWLINE, PUNCT, DIGIT)
_N_LETTER = (N_LOWER, N_UPPER)

Pair = Callable[[int, int], bool]
FEATURES: dict[str, Pair] = {
    "ascii_letters": lambda c, n: c == LETTER,
    "ascii_upper": lambda c, n: n == N_UPPER,
    "ascii_words": lambda c, n: c == LETTER and n not in _N_LETTER,
    "digits": lambda c, n: c == DIGIT,
    "numbers": lambda c, n: c == DIGIT and n != N_DIGIT,
    "spaced_numbers": lambda c, n: c == SPACE and n == N_DIGIT,
    "punctuation": lambda c, n: c == PUNCT,
    "punctuation_runs": lambda c, n: c == PUNCT and n != N_PUNCT,
    "newline_runs": lambda c, n: c == NEWLINE and n != N_NEWLINE,
    "indented_lines": lambda c, n: c == NEWLINE and n == N_SPACE,
    "latin": lambda c, n: c == LATIN,
    "latin_words": lambda c, n: c in _NONLETTER and n == N_LATIN,
    "latin_after_ascii": lambda c, n: c == LETTER and n == N_LATIN,
    "ascii_after_multibyte": lambda c, n: c == CONT and n in _N_LETTER,
    "greek": lambda c, n: c == GREEK,
    "greek_words": lambda c, n: c in _NONLETTER and n == N_GREEK,
    "cyrillic": lambda c, n: c == CYRILLIC,
    "cyrillic_words": lambda c, n: c in _NONLETTER and n == N_CYRILLIC,
    "cyrillic_upper": lambda c, n: c == CYRILLIC and n in (C_CAP, C_9X),
    "hebrew": lambda c, n: c == HEBREW,
    "arabic": lambda c, n: c == ARABIC,
    "arabic_words": lambda c, n: c in _NONLETTER and n == N_ARABIC,
    "indic": lambda c, n: c == INDIC and n != C_HIGH,
    "indic_words": lambda c, n: c in _NONLETTER and n == N_INDIC,
    "thai": lambda c, n: c == INDIC and n == C_HIGH,
    "kana": lambda c, n: c == KANA,
    "han": lambda c, n: c == HAN,
    "hangul": lambda c, n: c == HANGUL,
    "emoji": lambda c, n: c == OTHER and n == C_9X,
    "other": lambda c, n: c == OTHER and n != C_9X,
}
"""Feature name -> which (CUR class, NEXT class) pairs it counts."""

FEATURE_SCRIPT = {
    "ascii_letters": "ascii_alnum",
    "ascii_upper": "ascii_alnum",
    "ascii_words": "ascii_alnum",
    "digits": "ascii_alnum",
    "numbers": "ascii_alnum",
    "spaced_numbers": "ascii_other",
    "punctuation": "ascii_other",
    "punctuation_runs": "ascii_other",
    "newline_runs": "ascii_other",
    "indented_lines": "ascii_other",
    "latin": "latin_accented",
    "latin_words": "latin_accented",
    "latin_after_ascii": "latin_accented",
    "ascii_after_multibyte": "latin_accented",
    "greek_words": "greek",
    "cyrillic_words": "cyrillic",
    "cyrillic_upper": "cyrillic",
    "arabic_words": "arabic",
    "indic_words": "indic",
    **{name: name for name in ("greek", "cyrillic", "hebrew", "arabic", "indic", "thai")},
    **{name: name for name in ("kana", "han", "hangul", "emoji", "other")},
}
"""Feature -> the script (contextsim.counting.scripts.SCRIPTS) its tokens are reported under. The
byte classes only approximate the scripts: "kana" includes CJK punctuation, the seams
of mixed words go to latin_accented."""

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
    """How many byte pairs of `text` have each key 0..255 (for fitting, per-script
    breakdowns and tests; Counter's C loop, not the estimator's fast path)."""
    counts = [0] * 256
    for keys, pairs in _chunks(text):
        for key, n in Counter(keys[1 : pairs + 1]).items():
            counts[key] += n
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

    def by_script(self, text: str) -> dict[str, float]:
        """The model's tokens for `text` per script (FEATURE_SCRIPT; unrounded, exact
        weights: they sum to about count(text))."""
        found = features(text)
        out: dict[str, float] = {}
        for name, coefficient in self.coefficients.items():
            script = FEATURE_SCRIPT[name]
            out[script] = out.get(script, 0.0) + coefficient * found[name]
        return out

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


class Model(TypedDict):
    """One fitted model of the constants file."""

    encoding: str
    coefficients: dict[str, float]
    scale: float
    training_errors: dict[str, float]


class Constants(TypedDict):
    """The constants file: how it was made and the models, in the order fitted."""

    fitted_by: str
    samples: int
    models: dict[str, Model]


def load(path: Path = CONSTANTS) -> Constants:
    """The fitted constants (calibration.json)."""
    found: Constants = json.loads(path.read_text(encoding="utf-8"))
    return found


def calibrated_estimators(path: Path = CONSTANTS) -> list[Calibrated]:
    """The calibrated estimators of the constants file, e.g. calibrated-o200k. A model
    whose features are not exactly FEATURES (constants older than this code) is left
    out with a warning, so that bench/fit_calibration.py can still import this package
    to refit it; the tests require every model to load."""
    out = []
    for model, entry in load(path)["models"].items():  # in the order they were fitted
        coefficients = {str(k): float(v) for k, v in entry["coefficients"].items()}
        if set(coefficients) != set(FEATURES):
            stale = f"{path.name}: {model} is stale; run bench/fit_calibration.py"
            warnings.warn(stale, stacklevel=2)
            continue
        label = f"calibrated per script ({entry['encoding']})"
        out.append(Calibrated(f"calibrated-{model}", label, coefficients))
    return out
