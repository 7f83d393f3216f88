"""The LangChain form of a run: each message as the LangChain messages an agent would
hold, measured the way langchain_core's count_tokens_approximately measures them
(characters, image blocks), so LangChain's own policies can be simulated from counts.

Only structure and sizes are kept (LangChainPiece), never text.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from contextsim.model import Message, Run, ToolCallPart, ToolResultPart

LANGCHAIN_TYPES = ("system", "human", "ai", "tool")
"""LangChain message types, indexed by LangChainPiece.type."""
TOOL_PIECE = LANGCHAIN_TYPES.index("tool")
"""The type of a ToolMessage piece."""
UNPARSED = -2
"""LangChainPiece.call of a ToolMessage answering a call whose arguments did not parse:
no AIMessage lists it among its tool_calls."""
APPROX_CHARS_PER_TOKEN = 4
APPROX_MESSAGE_TOKENS = 3
APPROX_IMAGE_TOKENS = 85
"""langchain_core's count_tokens_approximately defaults: characters per token (rounded
up per message), tokens added per message, tokens per image block."""


class LangChainPiece(NamedTuple):
    """One LangChain message, as count_tokens_approximately measures it (characters).

    `content`: characters of its text content. `other`: the other characters it counts
    (the OpenAI role; a ToolMessage's call id and tool name; an AIMessage's repr of its
    tool calls). `last_line`: characters after the content's last newline (what
    trim_messages' partial mode tries first). `images`: image blocks. `call`: for a
    ToolMessage, the position among the caller's client-side calls of the call it
    answers, when that call is a parsed tool call of the nearest assistant message
    before it (where ClearToolUsesEdit looks); UNPARSED when the call it answers did
    not parse (no AIMessage lists it); else -1.
    """

    type: int
    content: int
    other: int
    last_line: int = 0
    images: int = 0
    call: int = -1

    @property
    def tokens(self) -> int:
        """What count_tokens_approximately gives for this message alone."""
        return approx_count(self.content + self.other, self.images)


def approx_count(chars: int, images: int = 0) -> int:
    """count_tokens_approximately of one LangChain message counting `chars` characters
    and `images` image blocks."""
    text = -(-chars // APPROX_CHARS_PER_TOKEN)
    return text + APPROX_MESSAGE_TOKENS + APPROX_IMAGE_TOKENS * images


def approx_form(
    run: Run,
) -> tuple[tuple[tuple[tuple[int, ...], ...], ...], tuple[tuple[int, ...], ...]]:
    """(pieces, call inputs) of every message's LangChain form, for Skeleton.langchain
    and Skeleton.call_inputs (see LangChainForms)."""
    forms = LangChainForms()
    pairs = [forms.add(m) for m in run.messages]
    return tuple(p for p, _ in pairs), tuple(c for _, c in pairs)


class LangChainForms:
    """The LangChain form of a run's messages, fed in order one at a time.

    The form is the one LangChain agents build: a system message is a SystemMessage; an
    assistant message an AIMessage whose content is its text (text and thinking joined
    by newlines) and whose tool_calls are its client-side calls (arguments "" parse as
    {}; arguments that are not a JSON object make an invalid tool call, which LangChain
    neither lists nor counts); each tool result a ToolMessage (content its text, the
    call id, name the called tool's, when known); any other text or images of a user or
    tool message one HumanMessage after its ToolMessages (images as image blocks), and a
    user message with neither results nor text an empty HumanMessage.
    """

    def __init__(self) -> None:
        self._calls: dict[str, tuple[int, int, str, bool]] = {}
        self._last_assistant = -1
        self._next = 0

    def add(self, message: Message) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
        """(pieces, call inputs) of the next message."""
        i = self._next
        self._next += 1
        if message.role == "assistant":
            piece, call_inputs, parsed = _ai_piece(message)
            for position, (call, ok) in enumerate(zip(client_calls(message), parsed, strict=True)):
                self._calls[call.id] = (i, position, call.name, ok)
            self._last_assistant = i
            return (piece,), call_inputs
        if message.role == "system":
            return (_text_piece(0, message.text, len("system")),), ()
        pieces = [_tool_piece(r, self._calls, self._last_assistant) for r in message.tool_results]
        images = sum(1 for p in message.parts if p.type == "image")
        if not pieces or message.text or images:
            pieces.append(_text_piece(1, message.text, len("user"), images))
        return tuple(pieces), ()


def client_calls(message: Message) -> tuple[ToolCallPart, ...]:
    return tuple(c for c in message.tool_calls if not c.server_side)


def _parse_arguments(arguments: str) -> dict[str, Any] | None:
    """The arguments as LangChain's tool-call parser reads them ("" is {}), or None when
    they are not a JSON object."""
    if not arguments:
        return {}
    try:
        value = json.loads(arguments, strict=False)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _text_piece(kind: int, text: str, other: int, images: int = 0) -> tuple[int, ...]:
    last_line = len(text) - text.rfind("\n") - 1
    return (kind, len(text), other, last_line, images, -1)


def _ai_piece(message: Message) -> tuple[tuple[int, ...], tuple[int, ...], list[bool]]:
    """The AIMessage piece, per client-side call the characters clearing its arguments
    saves, and which calls parsed."""
    calls = client_calls(message)
    parsed = [_parse_arguments(c.arguments) for c in calls]
    # The exact dicts LangChain keeps in AIMessage.tool_calls: the counter takes their repr.
    listed = [
        {"name": c.name, "args": args, "id": c.id, "type": "tool_call"}
        for c, args in zip(calls, parsed, strict=True)
        if args is not None
    ]
    other = len("assistant") + (len(repr(listed)) if listed else 0)
    saved = tuple(0 if args is None else len(repr(args)) - len("{}") for args in parsed)
    text = message.text
    piece = (2, len(text), other, len(text) - text.rfind("\n") - 1, 0, -1)
    return piece, saved, [args is not None for args in parsed]


def _tool_piece(
    result: ToolResultPart, calls: dict[str, tuple[int, int, str, bool]], last_assistant: int
) -> tuple[int, ...]:
    found = calls.get(result.call_id)
    name = found[2] if found else ""
    linked = found is not None and found[0] == last_assistant and found[3]
    other = len(result.call_id) + len("tool") + len(name)
    text = result.text
    position = found[1] if found and linked else UNPARSED if found and not found[3] else -1
    return (3, len(text), other, len(text) - text.rfind("\n") - 1, 0, position)
