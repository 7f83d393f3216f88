"""Estimators: text -> tokens, behind one Protocol, found in a plain dict registry.

A message is counted as its parts' text plus a fixed per-message overhead; tool-call
arguments count as their JSON text, images as a fixed number of tokens. Counts are
memoized by the message's content hash, so the same content is counted once.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import Protocol

from contextsim.counting.calibrated import calibrated_estimators
from contextsim.counting.offline_bpe import encoding
from contextsim.counting.redaction import counted_text
from contextsim.model import (
    ImagePart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpecPart,
)

MESSAGE_OVERHEAD = 4
"""Tokens added per message for role and framing."""

IMAGE_TOKENS = 1600
"""Tokens counted for one image (about one megapixel on Anthropic's models)."""


class Estimator(Protocol):
    name: str
    label: str

    def count(self, text: str) -> int:
        """Tokens in `text` (>= 0; 0 for the empty string)."""
        ...


class Chars4:
    """Characters / 4, rounded up: the English rule of thumb."""

    name = "chars4"
    label = "characters / 4"
    per_character = True

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 4)


# Han (with extensions and compatibility ideographs), kana, Hangul syllables and jamo,
# CJK punctuation and full-width forms: the scripts the seed rule counts 1 per token.
_CJK_RANGES = (
    "\u1100-\u11ff\u3000-\u303f\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f"
)
# Runs of what is *not* CJK are removed, leaving the CJK characters to be counted: in
# mostly non-CJK text the engine then consumes long runs in one tight loop instead of
# failing a match at every character (2-2.5x faster on mixed Latin/Cyrillic text;
# mostly CJK text is the other way round, and still counted at ~150M characters/s).
_NOT_CJK = re.compile(f"[^{_CJK_RANGES}]+")


class ScriptRule:
    """The seed system's rule, meant to overestimate: ASCII 4 characters per token,
    Chinese, Japanese and Korean 1, everything else (Cyrillic, accents, emoji...) 2."""

    name = "script"
    label = "script rule (ASCII 4, CJK 1, other 2)"
    per_character = True

    def count(self, text: str) -> int:
        if text.isascii():
            return math.ceil(len(text) / 4)
        ascii_chars = len(text.encode("ascii", "ignore"))
        cjk = len(_NOT_CJK.sub("", text))
        other = len(text) - ascii_chars - cjk
        return math.ceil(ascii_chars / 4 + cjk + other / 2)


class Tiktoken:
    """A real tiktoken encoding, loaded offline and hash-checked by tiktoken."""

    tokenizer = True
    """Exact but costly (about 1 s per 10 MB of text): see SLOW."""

    def __init__(self, name: str, encoding_name: str, label: str) -> None:
        self.name = name
        self.encoding_name = encoding_name
        self.label = label

    def count(self, text: str) -> int:
        # A long text is counted a piece at a time: the tokenizer returns a list of
        # every token (about 12 bytes of memory per character of text), which for one
        # 30 MB message was a third of a gigabyte.
        if len(text) <= PIECE_CHARS:  # nearly every text: no pieces to look for
            return self._count(text)
        return sum(self._count(piece) for piece in pieces(text, PIECE_CHARS))

    def _count(self, text: str) -> int:
        if not text.isascii():
            # Handing a str to the tokenizer makes CPython keep its UTF-8 form inside
            # that str for as long as it lives: for a run's messages, a second copy of
            # every non-ASCII text. A short-lived copy takes that cache with it.
            text = text[:-1] + text[-1:]
        return len(encoding(self.encoding_name).encode_ordinary(text))


PIECE_CHARS = 1 << 20
"""Characters a tokenizer is handed at a time, at least (see pieces)."""


def pieces(text: str, size: int) -> Iterator[str]:
    """`text` in pieces of at least `size` characters (the last may be shorter), cut only
    where the tokenizers' own first split (the pre-tokenizer's) cuts too, so that the
    pieces' counts add up exactly to the text's: after a line break followed by a letter
    or digit, or before a space between two letters or digits. Text with no such place
    (a long base64 string, say) stays in one piece."""
    start, n = 0, len(text)
    while n - start > size:
        found = _SAFE_CUT.search(text, start + size)
        if found is None:
            break
        cut = found.start() + 1
        yield text[start:cut]
        start = cut
    yield text[start:]


_SAFE_CUT = re.compile(r"\n(?=[^\W_])|[^\W_](?= [^\W_])")
"""A cut after the first character of the match: after a line break before a letter or
digit, or after a letter or digit before " " and another."""


_BUILT_IN: tuple[Estimator, ...] = (
    Chars4(),
    ScriptRule(),
    Tiktoken("cl100k", "cl100k_base", "tiktoken cl100k_base (GPT-4)"),
    Tiktoken("o200k", "o200k_base", "tiktoken o200k_base (GPT-4o, GPT-5)"),
    *calibrated_estimators(),  # calibrated-o200k, calibrated-cl100k (calibration.json)
)
ESTIMATORS: dict[str, Estimator] = {e.name: e for e in _BUILT_IN}
SLOW = tuple(name for name, e in ESTIMATORS.items() if getattr(e, "tokenizer", False))
"""Estimators that run a real tokenizer: a large import is browsable before their
counts are done, and counts them after."""
STAND_INS = {name: f"calibrated-{name}" for name in SLOW if f"calibrated-{name}" in ESTIMATORS}
"""A slow estimator's fast model (its calibrated estimator), what is shown while its
own counts are being made."""
DEFAULT = "o200k"
"""The estimator a view counts with when none is chosen."""
SHOWN_FIRST = STAND_INS.get(DEFAULT, DEFAULT)
"""What a large import's run is first shown with (the default's stand-in while the
real tokenizers count): the one skeleton built before the run can be browsed."""


def content_key(message: Message) -> str:
    """A hash of what an estimator reads in `message` (role and parts)."""
    h = hashlib.sha1(message.role.encode())
    for part in message.parts:
        h.update(b"\0" + part.type.encode() + b"\0")
        if isinstance(part, ThinkingPart):
            h.update(f"{part.sent_tokens}:{part.turn_only:d}:".encode() + part.text.encode())
        elif isinstance(part, TextPart):
            h.update(part.text.encode())
        elif isinstance(part, ToolCallPart):
            h.update(json.dumps([part.id, part.name, part.arguments]).encode())
        elif isinstance(part, ToolResultPart):
            h.update(part.call_id.encode() + b"\0" + part.text.encode())
        elif isinstance(part, ToolSpecPart):
            h.update(part.definition.encode())
    return h.hexdigest()


def thought_tokens(part: ThinkingPart, estimator: Estimator) -> int:
    """Tokens of one thinking part as sent: the size the log measured for it
    (ThinkingPart.sent_tokens), else the estimator's count of its text."""
    return part.sent_tokens or estimator.count(counted_text(part.text))


def count_parts(message: Message, estimator: Estimator) -> int:
    """Tokens of `message` by `estimator`, without the per-message overhead; a redaction
    marker counts as the text it stands for (contextsim.counting.redaction)."""
    total = 0
    for part in message.parts:
        if isinstance(part, ThinkingPart):
            total += thought_tokens(part, estimator)
        elif isinstance(part, TextPart | ToolResultPart):
            total += estimator.count(counted_text(part.text))
        elif isinstance(part, ToolCallPart):
            total += estimator.count(part.name) + estimator.count(counted_text(part.arguments))
        elif isinstance(part, ImagePart):
            total += IMAGE_TOKENS
        elif isinstance(part, ToolSpecPart):
            total += estimator.count(part.definition)
    return total


class CountMemo:
    """Message counts already made, by content key and estimator (tokens with the
    per-message overhead), so that a message is tokenized once however often it is
    counted. Its owner passes it where counting happens (a skeleton builder, a run
    store that seeds it with the counts stored at import); nothing is kept elsewhere.
    At `limit` distinct messages it starts afresh. Safe to share between threads: a
    count made twice at once is the same count."""

    def __init__(self, limit: int = 100_000) -> None:
        self._counts: dict[str, dict[str, int]] = {}
        """Content key -> {estimator name: tokens}: one entry per distinct message,
        whatever the number of estimators (one small dict per message is a fifth of
        the memory of one entry per pair)."""
        self.limit = limit

    def _known(self, key: str) -> dict[str, int]:
        counts = self._counts.get(key)
        if counts is None:
            if len(self._counts) >= self.limit:
                self._counts.clear()
            counts = self._counts.setdefault(key, {})
        return counts

    def count(self, message: Message, estimator: Estimator, key: str | None = None) -> int:
        """Tokens of `message` by `estimator`, overhead included (`key`, when the caller
        has it: content_key(message))."""
        counts = self._known(key or content_key(message))
        found = counts.get(estimator.name)
        if found is None:
            found = counts[estimator.name] = count_parts(message, estimator) + MESSAGE_OVERHEAD
        return found

    def seed(self, known: Iterable[tuple[str, str, int]]) -> None:
        """Remember counts made before, as (estimator name, content key, tokens with
        overhead), e.g. those stored at import."""
        for name, key, tokens in known:
            self._known(key)[name] = tokens


def count_message(
    message: Message, estimator: Estimator, key: str | None = None, memo: CountMemo | None = None
) -> int:
    """Tokens of `message` by `estimator`, overhead included; through `memo` when given
    (`key`, when the caller has it: content_key(message))."""
    if memo is not None:
        return memo.count(message, estimator, key)
    return count_parts(message, estimator) + MESSAGE_OVERHEAD
