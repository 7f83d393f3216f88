"""Writing scripts: which script every character of a text belongs to, fast.

The scripts and the code points each covers are in contextsim.counting.script_table (SCRIPTS,
RANGES; re-exported here); combining marks count with the script of the character
before them.

Speed: count_by_script reads the text as UTF-16 and classifies every code unit with
byte translations and big-integer bit operations (scriptscan), so its cost is a few
passes of C code over the text, with no per-character Python loop. Only rare
characters (see scriptscan.RARE) and combining marks take a Python loop, over their
runs.
"""

from __future__ import annotations

import re
from functools import cache

from contextsim.counting import scriptscan
from contextsim.counting.script_table import MARK, RANGES, SCRIPTS, range_class, script_of

__all__ = [
    "MARK",
    "RANGES",
    "SCRIPTS",
    "count_by_script",
    "range_class",
    "resolve",
    "script_of",
    "segments",
]


def _mark_class() -> str:
    spans = [(a, b) for a, b, c in RANGES if c == MARK]
    return "[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in spans) + "]+"


_MARKS = re.compile(_mark_class())


def count_by_script(text: str) -> dict[str, int]:
    """Characters (code points) of `text` per script, for every name in SCRIPTS (zeros
    included); the values sum to len(text). About 14 ms per million characters of mixed
    text (see the module docstring)."""
    counts = scriptscan.scan_counts(text)
    return resolve(text, counts)


def resolve(text: str, counts: dict[str, int]) -> dict[str, int]:
    """Turn scriptscan's counts of `text` (scripts plus MARK and rare characters) into
    counts per script: rare characters are classified one by one (they are rare), and
    every run of combining marks moves to the script of the character before it."""
    out = dict.fromkeys(SCRIPTS, 0)
    for name, n in counts.items():
        if name in out:
            out[name] += n
    if counts.get(scriptscan.RARE):
        for match in scriptscan.RARE_CHARS.finditer(text):
            for char in match.group():
                found = range_class(ord(char))
                if found != MARK:
                    out[found] += 1
    if counts.get(MARK) or counts.get(scriptscan.RARE):
        for match in _MARKS.finditer(text):
            start = match.start()
            out[script_of(text[start - 1]) if start else "other"] += match.end() - start
    return out


@cache
def _code_names() -> dict[int, str]:
    names = {code: name for name, codes in scriptscan.CODES_OF.items() for code in codes}
    return names | dict.fromkeys(scriptscan.SINGLETONS, scriptscan.RARE)


def segments(text: str) -> list[tuple[str, int, int]]:
    """Runs of one script as (script, start, end) code point offsets into `text`,
    covering it in order; adjacent runs differ in script. Combining marks join the run
    of the character before them."""
    names = _code_names()
    out: list[tuple[str, int, int]] = []

    def add(name: str, start: int, end: int) -> None:
        if out and out[-1][0] == name:
            out[-1] = (name, out[-1][1], end)
        else:
            out.append((name, start, end))

    stream = scriptscan.scan(text)
    for match in re.finditer(rb"(.)\1*", stream, re.S):
        name, start, end = names[match.group()[0]], match.start(), match.end()
        if name == MARK:
            add(out[-1][0] if out else "other", start, end)
        elif name == scriptscan.RARE:
            for i in range(start, end):  # rare characters: one by one
                found = range_class(ord(text[i]))
                add((out[-1][0] if out else "other") if found == MARK else found, i, i + 1)
        else:
            add(name, start, end)
    return out
