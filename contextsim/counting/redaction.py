"""Redaction markers: text a log left out but states the length of.

Logs scrubbed before they are shared replace each free text with a marker such as
``[REDACTED_TEXT len=13131 sha=036b7e47]`` (or ``REDACTED_OUTPUT`` for a tool's output,
``REDACTED_ARGUMENTS`` for a call's): the original had 13,131 characters and the
model read all of them. Estimators count such a marker as that many characters of
plain English-like prose (FILLER), not as the marker's own few characters.
"""

from __future__ import annotations

import re

MARKER = re.compile(
    r"\[REDACTED_(?!IMAGE|ENCRYPTED)[A-Z_]{1,40} len=(\d{1,9})(?: sha=[0-9a-f]{0,64})?\]"
)
"""A marker of redacted text (TEXT, OUTPUT, ARGUMENTS, INPUT, ...). Redacted images and
encrypted content are not text the model reads as such: they keep their own count."""
FILLER = (
    "the model reads every line of this text before it answers and then it writes a "
    "short reply about the code, the files and the tests that were changed today. "
)
"""Ordinary prose: about 4.5 characters per token in the usual tokenizers."""


def counted_text(text: str) -> str:
    """`text` as an estimator should count it: every redaction marker replaced by as
    many characters of filler as it says the original had."""
    if "[REDACTED_" not in text:
        return text
    return MARKER.sub(lambda m: _filler(int(m.group(1))), text)


ENCRYPTED = re.compile(r"\[REDACTED_ENCRYPTED_CONTENT len=(\d{1,9})(?: sha=[0-9a-f]{0,64})?\]")
"""The marker a scrubbed log leaves in place of encrypted content (Codex reasoning)."""


def encrypted_length(value: object) -> int:
    """Characters of an encrypted blob as the log gives it: its length, or the length a
    redaction marker says it had; 0 for anything that is not a string."""
    if not isinstance(value, str):
        return 0
    found = ENCRYPTED.fullmatch(value)
    return int(found.group(1)) if found else len(value)


def _filler(length: int) -> str:
    times = length // len(FILLER) + 1
    return (FILLER * times)[:length]
