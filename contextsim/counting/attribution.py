"""Attribute a real tokenizer's tokens to writing scripts (DESIGN.md 4.7).

Rule: a token belongs to the script whose characters cover most of the token's UTF-8
bytes (a character's script is contextsim.counting.scripts', combining marks included). Ties
go to the script listed first in SCRIPTS, except that ``ascii_other`` loses every tie,
so " a" (space and letter) is ``ascii_alnum`` and "。" split into three byte tokens is
three ``han`` tokens. Every token goes to exactly one script, so the counts are
integers that sum exactly to the encoding's token count for the text. Byte-level
tokens that split a multi-byte character are handled naturally: each covers some of
that character's bytes.

The leading space a BPE word token carries is counted with the word; that is why
``ascii_other`` usually gets few tokens (newlines, indentation, punctuation runs).
"""

from __future__ import annotations

from contextsim.counting.offline_bpe import encoding
from contextsim.counting.scripts import SCRIPTS, segments

ALIASES = {"o200k": "o200k_base", "cl100k": "cl100k_base"}
"""Short names accepted for encoding names (the estimators' names)."""

_RANK = {name: (name != "ascii_other", -i) for i, name in enumerate(SCRIPTS)}


def byte_segments(text: str) -> list[tuple[int, str]]:
    """(end byte offset, script) of each script run of `text` in its UTF-8 encoding (a
    lone surrogate counts 3 bytes, as tiktoken's replacement character does)."""
    out: list[tuple[int, str]] = []
    at = 0
    for name, start, end in segments(text):
        at += len(text[start:end].encode("utf-8", "surrogatepass"))
        out.append((at, name))
    return out


def token_lengths(text: str, encoding_name: str) -> list[int]:
    """UTF-8 byte length of each token of `text` in the named tiktoken encoding."""
    enc = encoding(ALIASES.get(encoding_name, encoding_name))
    return [len(b) for b in enc.decode_tokens_bytes(enc.encode_ordinary(text))]


def attribute(text: str, encoding_name: str) -> dict[str, int]:
    """Tokens of `text` in the tiktoken encoding `encoding_name` ("o200k_base",
    "cl100k_base" or their short names), per script of SCRIPTS (zeros included): each
    token goes to the script covering most of its bytes, so the values sum exactly to
    the encoding's token count."""
    counts = dict.fromkeys(SCRIPTS, 0)
    bounds = byte_segments(text)
    seg = 0
    start = 0
    for length in token_lengths(text, encoding_name):
        end = start + length
        while bounds[seg][0] <= start:  # skip runs that end before this token
            seg += 1
        if bounds[seg][0] >= end:  # the common case: inside one run
            counts[bounds[seg][1]] += 1
        else:
            counts[_majority(bounds, seg, start, end)] += 1
        start = end
    return counts


def _majority(bounds: list[tuple[int, str]], seg: int, start: int, end: int) -> str:
    """The script covering most of bytes start..end, runs from bounds[seg] on."""
    weights: dict[str, int] = {}
    at = start
    while at < end:
        run_end, name = bounds[seg]
        take = min(run_end, end) - at
        weights[name] = weights.get(name, 0) + take
        at += take
        seg += 1
    return max(weights, key=lambda name: (weights[name], _RANK[name]))
