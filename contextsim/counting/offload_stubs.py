"""The offload stubs of LangChain Deep Agents, rendered exactly.

Source: deepagents 0.7.32 (PyPI): `deepagents.middleware._message_eviction` (the tool
result stub, its preview and note), `deepagents.middleware.filesystem` (the human
message stub) and `deepagents.backends.utils` (line numbers, the truncation marker, the
call id's path component). The texts are reproduced so that their sizes are exact: the
skeleton renders them for big tool results (skeleton.STUB_MIN_CHARS) and the
`deepagents` policy counts them.

This module imports nothing from contextsim, so the skeleton and the policy can both
use it.
"""

from __future__ import annotations

import hashlib

HEAD = TAIL = 5
"""Lines shown at each end of a preview of more than HEAD + TAIL lines."""
LINE_LIMIT = 1000
"""PREVIEW_LINE_CHAR_LIMIT: preview lines are clipped to this many characters."""
ID_SHOWN = 32
"""_VISIBLE_TOOL_CALL_ID_LIMIT: a longer call id is cut to this many and '...'."""
PATH_ID_BYTES = 128
"""_MAX_TOOL_CALL_PATH_COMPONENT_BYTES: a longer (UTF-8) call id is hashed in the path."""
UNKNOWN_ID = "unknown-" + "0" * 8
"""The path component for an empty call id (the package draws 8 random hex digits)."""
HUMAN_PATH = "/conversation_history/" + "00000000-0000-0000-0000-000000000000.md"
"""Stand-in path of an offloaded human message (the package's has a random UUID)."""

TOOL_STUB = (
    "Tool result too large, the result of this tool call {tool_call_id} was saved in the "
    "filesystem at this path: {file_path}\n\nYou can read the result from the filesystem by "
    "using the read_file tool, but make sure to only read part of the result at a time.\n\n"
    "You can do this by specifying an offset and limit in the read_file tool call. For "
    "example, to read the first 100 lines, you can use the read_file tool with offset=0 and "
    "limit=100.\n\n{preview_note}\n\n{content_sample}\n"
)
HUMAN_STUB = (
    "Message content too large and was saved to the filesystem at: {file_path}\n\nYou can "
    "read the full content using the read_file tool with pagination (offset and limit "
    "parameters).\n\n{preview_note}\n\n{content_sample}\n"
)
MARKER = "... [{} lines truncated] ..."
OMITTED = (
    f"lines of the form `{MARKER.format('N')}` indicate omitted lines in the middle of the content"
)
CLIPPED = (
    f"the output contains lines longer than {LINE_LIMIT} characters; this preview shows "
    f"only their first {LINE_LIMIT} characters"
)


def preview(text: str) -> tuple[str, bool, bool]:
    """(line-numbered preview, lines omitted, lines clipped) as Deep Agents renders it:
    all lines when at most 10, else the first 5, a marker and the last 5; each shown
    line clipped to 1000 characters."""
    lines = text.splitlines()
    omitted = len(lines) > HEAD + TAIL
    shown = [*lines[:HEAD], *lines[-TAIL:]] if omitted else lines
    clipped = any(len(line) > LINE_LIMIT for line in shown)
    cut = [line[:LINE_LIMIT] for line in shown]
    if not omitted:
        return _numbered(cut, 1), False, clipped
    tail = _numbered(cut[HEAD:], len(lines) - TAIL + 1)
    middle = MARKER.format(len(lines) - HEAD - TAIL)
    return f"{_numbered(cut[:HEAD], 1)}\n{middle}\n{tail}", True, clipped


def _numbered(lines: list[str], start: int) -> str:
    width = len(str(start + len(lines) - 1))
    return "\n".join(f"{start + k:>{width}}  {line}" for k, line in enumerate(lines))


def preview_note(omitted: bool, clipped: bool, subject: str) -> str:
    """The sentence introducing a preview; it names only the losses the preview has."""
    head = "showing the head and tail " if omitted else ""
    caveats = [c for on, c in ((omitted, OMITTED), (clipped, CLIPPED)) if on]
    note = f"Here is a preview {head}of the {subject}"
    return f"{note} ({'; '.join(caveats)}):" if caveats else f"{note}:"


def path_id(tool_call_id: str) -> str:
    """The call id as the offload file's name: path separators and dots replaced; an id
    over 128 bytes becomes a hash of it, an empty one `unknown-` and 8 hex digits."""
    if not tool_call_id:
        return UNKNOWN_ID
    safe = tool_call_id.replace(".", "_").replace("/", "_").replace("\\", "_")
    if len(safe.encode("utf-8", "surrogatepass")) > PATH_ID_BYTES:
        digest = hashlib.sha256(tool_call_id.encode("utf-8", "surrogatepass")).hexdigest()
        return f"call-{digest}"
    return safe


def render_tool_stub(text: str, tool_call_id: str) -> str:
    """The whole text that replaces an offloaded tool result (`text`: the ToolMessage's
    text blocks joined by newlines, a plain string content as it is)."""
    sample, omitted, clipped = preview(text)
    shown = tool_call_id[:ID_SHOWN] + "..." if len(tool_call_id) > ID_SHOWN else tool_call_id
    note = preview_note(omitted, clipped, "result")
    return TOOL_STUB.format(
        tool_call_id=shown,
        file_path=f"/large_tool_results/{path_id(tool_call_id)}",
        preview_note=note,
        content_sample=sample,
    )


def render_human_stub(text: str, file_path: str = HUMAN_PATH) -> str:
    """The whole text that replaces an offloaded human message."""
    sample, omitted, clipped = preview(text)
    note = preview_note(omitted, clipped, "content")
    return HUMAN_STUB.format(file_path=file_path, preview_note=note, content_sample=sample)
