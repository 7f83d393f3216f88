"""Requests a log records whole, lined up with the history they were made from.

Some logs keep, beside the history, the exact messages of each request (SWE-agent's
per-step ``query``, called ``messages`` in older files). Where a request's messages
line up with the history one for one, a message whose text differs was sent shortened
by the agent (a history processor); that is an Elision, which `as_logged` replays.
Where they do not line up, the request is not trusted: a warning names it and it is
replayed from the history.

Units: message indexes and request (step) indexes; no tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextsim.model import Elision


@dataclass(frozen=True, slots=True)
class SentRequest:
    """Request `step`, whose history is the first `end` messages, as the log says it
    was sent: (role, text) per message; `where` is its place in the file."""

    step: int
    end: int
    messages: Sequence[tuple[str, str]]
    where: str


def elisions_of(
    history: Sequence[tuple[str, str]], requests: Sequence[SentRequest]
) -> tuple[tuple[Elision, ...], list[str]]:
    """The elisions the requests show against `history` ((role, text) per message),
    and a warning for each request that does not line up with it or that sends whole
    a message an earlier request had sent shortened. A message's first shortened text
    is the one kept."""
    found: dict[int, Elision] = {}
    warnings: list[str] = []
    for request in requests:
        problem = _misfit(history, request)
        if problem:
            warnings.append(
                f"{request.where}: {problem}; this request is replayed from the history"
            )
            continue
        for i, (_, text) in enumerate(request.messages):
            if text != history[i][1] and i not in found:
                found[i] = Elision(i, request.step, text)
        sent_whole = [
            i
            for i, e in found.items()
            if e.from_step < request.step and _whole(request, history, i)
        ]
        if sent_whole:
            warnings.append(
                f"{request.where}: message {sent_whole[0]} is sent whole after an earlier "
                "request sent it shortened; it is replayed shortened"
            )
    return tuple(sorted(found.values(), key=lambda e: e.message)), warnings


def _misfit(history: Sequence[tuple[str, str]], request: SentRequest) -> str:
    """Why the request does not line up with the history, or ""."""
    if request.end > len(history) or len(request.messages) != request.end:
        return (
            f"{len(request.messages)} messages where the history has {request.end} "
            "before this request"
        )
    for i, (role, _) in enumerate(request.messages):
        if role != history[i][0]:
            return f"message {i} is {role!r} where the history has {history[i][0]!r}"
    return ""


def _whole(request: SentRequest, history: Sequence[tuple[str, str]], i: int) -> bool:
    return i < len(request.messages) and request.messages[i][1] == history[i][1]
