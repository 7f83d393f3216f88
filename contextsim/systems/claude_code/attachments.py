"""Claude Code 2.1's `attachment` records: context its harness adds to the next request
(hook output, memory files, files read in, skill and agent listings, todo reminders,
MCP instructions, deferred-tool deltas, queued task notifications, date changes).

Claude Code sends each as a `<system-reminder>` block of the user turn that follows, so
the model reads its text; the record holds that text (or the lines it is made of). The
text is taken from the keys that carry it; an attachment none of whose keys carry text
(a UI event) adds nothing. Its exact wording around the text is Claude Code's and is
not in the log: the text alone is counted, which the fit's overhead covers the rest of.
"""

from __future__ import annotations

import json
from typing import Any

TEXT_KEYS = (
    "content",
    "prompt",
    "text",
    "snippet",
    "addedLines",
    "addedNames",
    "removedNames",
    "instructions",
    "stdout",
    "newDate",
    "filename",
    "path",
)
"""Keys whose values are what an attachment puts before the model, in this order."""


def attachment_text(data: Any) -> str:
    """The text an attachment record's `attachment` object puts in the request ("" for
    one that carries none: nothing is sent)."""
    if not isinstance(data, dict):
        return ""
    pieces = [_text(data[key]) for key in TEXT_KEYS if key in data]
    body = "\n".join(p for p in pieces if p)
    if not body:
        return ""
    return f"<system-reminder>\n{body}\n</system-reminder>"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value if _text(v))
    if isinstance(value, dict):
        inner = [_text(value[k]) for k in TEXT_KEYS if k in value]
        found = "\n".join(p for p in inner if p)
        return found or json.dumps(value, ensure_ascii=False)
    return "" if value is None or isinstance(value, bool) else str(value)
