"""Captured model calls placed in the conversations they belong to.

A capture proxy sees every request whole: tool definitions, system prompt and messages
as the provider got them. A conversation is stored as a run that holds every message it
ever had; what its latest request sent (its *view*) is the run's leading system messages
(the head) and, after a compaction, only what follows the compaction's boundary.

A new call is placed against a conversation's view (by exchanges.message_key, which
ignores thinking and surrounding whitespace and compares tool arguments as JSON):

- **extend**: the request starts with the whole view. Its further messages and the
  response are appended (a retried failed request adds only the response).
- **redo**: the request is the view without its last response (the client asked again,
  say after a timeout): the last response is replaced by the new one.
- **edited**: the request holds the conversation's last response, but not all that
  came before it as it was (the client edited its history: dropped ephemeral
  reminders, cleared old tool results). What follows the response is appended; the run
  keeps the history as first sent (exchanges.rebuild does the same for logs).
- **compaction**: the request keeps the view's head, and the first message after the
  head holds the text of the conversation's last response (Claude Code sends the summary
  it just had written as the first user message of the continued conversation). The new
  messages are appended after a Compaction, the first marked as the summary.
- otherwise the call starts a new conversation (a subagent, a side call, a new chat).

Units: message indexes; no tokens.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any, Literal, NamedTuple

from contextsim.ingest.exchanges import message_key
from contextsim.model import Message

FORMAT = "capture"
"""The format name of runs recorded from captured calls."""
MIN_SUMMARY_CHARS = 40
"""A last response shorter than this ("OK") proves nothing when found in a message."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """What a stored conversation sent last: `keys` of every message of its run,
    `head` leading system messages, and `boundary`, the run index from which its view
    goes on after the head (0 when it never compacted). `answered`: its last message is
    a response; `last_text` is that response's text ('' when it is not one)."""

    keys: tuple[Hashable, ...]
    head: int
    boundary: int = 0
    last_text: str = ""
    answered: bool = False

    @property
    def view(self) -> tuple[Hashable, ...]:
        """The keys of what the conversation's latest request sent, and its response."""
        if self.boundary <= self.head:
            return self.keys
        return self.keys[: self.head] + self.keys[self.boundary :]


Kind = Literal["extend", "redo", "edited", "compaction", "new"]


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a call goes: `kind`, and `skip`, how many of the request's messages the
    conversation already holds (the rest are new)."""

    kind: Kind
    skip: int = 0


def head_of(messages: Sequence[Message]) -> int:
    """How many messages lead the request with the system role (tools, prompts)."""
    n = 0
    while n < len(messages) and messages[n].role == "system":
        n += 1
    return n


def conversation(messages: Sequence[Message], boundary: int = 0) -> Conversation:
    """The Conversation of a stored run's messages and its last compaction boundary."""
    answered = bool(messages) and messages[-1].role == "assistant"
    text = messages[-1].text.strip() if answered else ""
    keys = tuple(message_key(m) for m in messages)
    return Conversation(keys, head_of(messages), boundary, text, answered)


def place(conv: Conversation, request: Sequence[Message]) -> Placement:
    """Where a call whose request sent `request` goes against `conv` (module docstring)."""
    keys = [message_key(m) for m in request]
    view = conv.view
    if tuple(keys[: len(view)]) == view:
        return Placement("extend", len(view))
    if len(view) == len(keys) + 1 and tuple(keys) == view[:-1] and conv.answered:
        return Placement("redo", len(keys))
    head = head_of(request)
    after = _after_last_response(conv, keys, head)
    if after:
        return Placement("edited", after)
    if _continues_after_summary(conv, request, keys, head):
        return Placement("compaction", head)
    return Placement("new")


class Continuation(NamedTuple):
    """What a placed call does to its conversation's messages: drops the last
    `replaced` of them (a redo's earlier response), then appends `added`; `compacted`:
    a compaction comes before them (the first of them is the summary, so marked)."""

    replaced: int
    added: tuple[Message, ...]
    compacted: bool


def continuation(
    placed: Placement, request: Sequence[Message], reply: Sequence[Message]
) -> Continuation:
    """The Continuation of a call placed `placed` (not "new") whose request sent
    `request` and that got `reply` (its response, or nothing)."""
    if placed.kind == "redo":
        return Continuation(1, tuple(reply), False)
    new = list(request[placed.skip :])
    compacted = placed.kind == "compaction" and bool(new)
    if compacted:
        new[0] = replace(new[0], compact_summary=True)
    return Continuation(0, (*new, *reply), compacted)


def _after_last_response(conv: Conversation, keys: list[Hashable], head: int) -> int:
    """Where the request goes on after the conversation's last response, when it holds
    that response after an unchanged head; else 0."""
    if not conv.answered:
        return 0
    if tuple(keys[:head]) != conv.view[: conv.head] or head != conv.head:
        return 0
    last = conv.view[-1]
    for j in range(len(keys) - 1, head - 1, -1):
        if keys[j] == last:
            return j + 1
    return 0


def _continues_after_summary(
    conv: Conversation, request: Sequence[Message], keys: list[Hashable], head: int
) -> bool:
    if len(conv.last_text) < MIN_SUMMARY_CHARS or head >= len(request):
        return False
    if head != conv.head or tuple(keys[:head]) != conv.keys[: conv.head]:
        return False
    first = " ".join(request[head].text.split())
    return " ".join(conv.last_text.split()) in first


def choose(
    conversations: Sequence[Conversation], request: Sequence[Message]
) -> tuple[int, Placement]:
    """The conversation a call continues (its position in `conversations`, most
    recent first, and how) or (-1, Placement("new")). An extension that matches more
    of the request wins; then a redo, an edited history, a compaction; ties go to the
    most recent."""
    best, found = -1, Placement("new")
    rank = {"extend": 4, "redo": 3, "edited": 2, "compaction": 1, "new": 0}
    for i, conv in enumerate(conversations):
        placed = place(conv, request)
        better = (rank[placed.kind], placed.skip) > (rank[found.kind], found.skip)
        if placed.kind != "new" and better:
            best, found = i, placed
    return best, found


SESSION_HEADERS = ("session_id", "conversation_id", "x-session-id")
"""Headers by which clients name their own session (Codex sends the first two)."""


def session_marker(body: Mapping[str, Any], headers: Mapping[str, str]) -> str:
    """The client's own name for its session, or '': Claude Code's
    ``metadata.user_id`` (``user_<hash>_account_<uuid>_session_<uuid>``, or a JSON text
    with ``session_id``), a session header (SESSION_HEADERS, names in lower case), or the
    Responses API's ``prompt_cache_key`` (Codex sets it to its conversation id)."""
    metadata = body.get("metadata")
    user = metadata.get("user_id") if isinstance(metadata, Mapping) else None
    if isinstance(user, str) and user:
        found = _SESSION_IN_USER_ID.search(user)
        if found:
            return found.group(1)
        with suppress(ValueError):
            data = json.loads(user)
            if isinstance(data, dict) and isinstance(data.get("session_id"), str):
                return str(data["session_id"])[:200]
    for name in SESSION_HEADERS:
        if headers.get(name):
            return headers[name][:200]
    key = body.get("prompt_cache_key")
    return key[:200] if isinstance(key, str) else ""


_SESSION_IN_USER_ID = re.compile(r"_session_([0-9A-Za-z-]{8,80})$")
