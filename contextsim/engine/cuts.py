"""Where a request may be cut, and the newest cut that fits, in O(log M) per request.

A cut at c keeps the head, inserts a note, and sends messages [c, end). A cut is safe
for history end E when no tool result in [c, E) answers a call made before c, so a
call is never separated from its result; `violation[c]` is the first result that would
break it, which keeps request k a function of the messages before it alone.
"""

from __future__ import annotations

import bisect
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from contextsim.counting.skeleton import Skeleton
from contextsim.engine.accounting import Accountant


def leading_system(sk: Skeleton) -> int:
    """How many system messages open the run (the agent's system prompt)."""
    i = 0
    while i < sk.size and sk.roles[i] == "system":
        i += 1
    return i


def head_end(sk: Skeleton) -> int:
    """The head every cutting policy keeps: leading system messages and the first
    message after them (the task)."""
    i = 0
    while i < sk.size and sk.roles[i] == "system":
        i += 1
    return min(i + 1, sk.size)


def turn_starts(sk: Skeleton, head: int) -> list[int]:
    """Starts of user turns after the head: where a turn-keeping policy may cut."""
    return [i for i in range(head, sk.size) if sk.user_turn[i]]


def round_starts(sk: Skeleton, head: int) -> list[int]:
    """Assistant messages after the head: where a round-keeping policy may cut."""
    return [i for i in range(head, sk.size) if sk.roles[i] == "assistant"]


def violations(sk: Skeleton, candidates: Sequence[int]) -> list[int]:
    """For each candidate cut c, the first tool-result message j >= c answering a call
    made before c (sk.size when none): the cut is unsafe for a history end > j."""
    out = [sk.size] * len(candidates)
    # Assign each result j to the not-yet-violated candidates in (call, j]: results come
    # in index order, so the first assignment is the smallest j. `nxt` skips assigned ones.
    nxt = list(range(len(candidates) + 1))

    def find(x: int) -> int:
        while nxt[x] != x:
            nxt[x] = nxt[nxt[x]]
            x = nxt[x]
        return x

    size = len(candidates)
    for j, call in enumerate(sk.answers):
        if call < 0:
            continue
        x = bisect.bisect_right(candidates, call)
        if x >= size or candidates[x] > j:
            continue  # the usual case: no candidate between a call and its result
        x = find(x)
        while x < len(candidates) and candidates[x] <= j:
            out[x] = j
            nxt[x] = x + 1
            x = find(x + 1)
    return out


class Cuts:
    """Cut candidates of one kind, with the sums needed to find the newest that fits."""

    def __init__(self, acct: Accountant, candidates: list[int], violation: list[int]):
        self.c = candidates
        self.violation = violation
        self.g = [acct.g[c] for c in candidates]
        self.h = [acct.h[c] for c in candidates]
        self.acct = acct

    def fitting(self, end: int, cb: int, room: int, total: int | None = None) -> int | None:
        """The smallest safe candidate c < end whose tail [c, end) costs at most `room`
        tokens (clearable messages before cb cleared), or None. `total` is the sent size
        of [0, end) with that clearing, when the caller has it already."""
        c = self.c
        hi = bisect_left(c, end)
        if hi == 0:
            return None
        # tail(c) = total(end) - f(c), with f = g below cb and h - clear_save[cb] above.
        if total is None:
            total = self.acct.span(0, end, cb, ub=self.acct.turn_bound(end))
        need = total - room
        split = bisect_right(c, cb, 0, hi)
        j = bisect_left(self.g, need, 0, split)
        if j == split:
            j = bisect_left(self.h, need + self.acct.clear_save[cb], split, hi)
        if j < hi and self.violation[j] >= end:
            return c[j]  # the usual case: the cut is safe
        return self._safe(j, hi, end)

    def newest(self, end: int) -> int | None:
        """The newest safe candidate before `end` (the smallest tail), or None."""
        hi = bisect.bisect_left(self.c, end)
        j = hi - 1
        while j >= 0 and self.violation[j] < end:
            j -= 1
        return self.c[j] if j >= 0 else None

    def _safe(self, j: int, hi: int, end: int) -> int | None:
        # A later candidate has a smaller tail, so it fits too.
        while j < hi and self.violation[j] < end:
            j += 1
        return self.c[j] if j < hi else None
