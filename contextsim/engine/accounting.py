"""Token accounting of plans in O(1) per request, from prefix sums.

Every figure of a request (sent tokens, tokens by disposition and by kind, counts of
cleared or truncated messages, the cached prefix) is a difference of prefix sums over
the plan's two sent ranges, so a step costs the same whether its history holds ten
messages or ten thousand.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from functools import cached_property
from itertools import accumulate, repeat
from operator import and_, eq, mul, sub

from contextsim.counting.skeleton import Skeleton, newest_user_turns, prefix_sums, thinking_of
from contextsim.engine.plan import Plan, Statics
from contextsim.model import KINDS

NKINDS = len(KINDS)
THINKING = KINDS.index("thinking")
"""The composition's row of thinking: no message is of this kind; each assistant
message's thinking tokens are counted here instead of in its own kind's row."""


def _by_kind(
    tokens: Sequence[int], kinds: Sequence[int], mask: Sequence[bool], thinking: Sequence[int]
) -> list[list[int]]:
    if not any(mask):  # most policies clear or offload nothing: no sums to make
        return [[0] * (len(tokens) + 1)] * NKINDS
    masked = list(map(mul, tokens, mask))
    thought = list(map(mul, thinking, mask)) if any(thinking) else None
    if thought is not None:
        masked = list(map(sub, masked, thought))
    rows = [
        prefix_sums(list(map(mul, masked, map(eq, kinds, repeat(kind))))) for kind in range(NKINDS)
    ]
    if thought is not None:
        rows[THINKING] = prefix_sums(thought)
    return rows


def _carried(
    sums: list[int],
    tokens: Sequence[int],
    kinds: Sequence[int],
    kind: int,
    thinking: Sequence[int],
) -> list[int]:
    """Prefix sums of one kind's tokens (thinking apart, see THINKING), `sums` carried
    on over the messages after it."""
    start = len(sums) - 1
    if kind == THINKING:
        new: Iterable[int] = thinking[start:]
    else:
        body = map(sub, tokens[start:], thinking[start:])
        new = map(mul, body, map(eq, kinds[start:], repeat(kind)))
    return sums + list(accumulate(new, initial=sums[-1]))[1:]


def _and_not(a: bool, b: bool) -> bool:
    return a and not b


class Accountant:
    """Prefix sums of one skeleton under one policy's statics (all in tokens)."""

    def __init__(
        self,
        sk: Skeleton,
        statics: Statics,
        tokens: tuple[int, ...] | None = None,
        grown_from: Accountant | None = None,
    ):
        """`grown_from`: the accountant of a skeleton `sk` grew from (contextsim.counting.memory),
        whose sums are carried on over the new messages where nothing is cleared or
        offloaded (a live run's appends), instead of being made again."""
        tokens = tokens if tokens is not None else sk.tokens
        n = len(tokens)
        offloaded = statics.offloaded or [False] * n
        any_offloaded = any(offloaded)
        if any_offloaded:
            clearable = list(map(_and_not, statics.clearable, offloaded))
        else:
            clearable = list(statics.clearable)
        self.clearable = clearable
        self.offloaded = offloaded
        self._tokens = tokens
        self._kinds = sk.kinds
        # Thinking tokens per message, within the message's tokens (a reference
        # accountant's tokens come from another tokenizer).
        thinking_tokens = thinking_of(sk)
        # Token counts are never negative, so without thinking every min is 0: a
        # list of zeros, not a call per message (three quarters of a grown
        # accountant's time at 20,000 messages).
        self._thinking = (
            list(map(min, thinking_tokens, tokens)) if any(thinking_tokens) else [0] * n
        )
        plain = not any_offloaded and not any(clearable)
        if grown_from is not None and plain and grown_from._carries_on(tokens, sk.kinds):
            self.raw = grown_from._sums_over(tokens)
        else:
            grown_from = None
            self.raw = prefix_sums(tokens)
        zeros = [0] * (n + 1)
        if any(clearable):
            saved = map(max, map(sub, tokens, statics.cleared_tokens), repeat(0))
            self.clear_save = prefix_sums(list(map(mul, saved, clearable)))
            self.clear_count = prefix_sums(clearable)
            self.clear_raw = prefix_sums(list(map(mul, tokens, clearable)))
        else:
            self.clear_save = self.clear_count = self.clear_raw = zeros
        if any_offloaded:
            saved = map(max, map(sub, tokens, statics.offload_tokens), repeat(0))
            self.off_save = prefix_sums(list(map(mul, saved, offloaded)))
            self.off_count = prefix_sums(offloaded)
            self.off_raw = prefix_sums(list(map(mul, tokens, offloaded)))
        else:
            self.off_save = self.off_count = self.off_raw = zeros
        # Thinking a plan clears before its thinking_before (never an offloaded message's).
        thinking = statics.thinking
        if any_offloaded and thinking:
            thinking = [0 if o else t for t, o in zip(thinking, offloaded, strict=True)]
        self.thinks = [t > 0 for t in thinking] if any(thinking) else []
        if self.thinks:
            both = list(map(and_, clearable, self.thinks))
            self.think_save = prefix_sums(thinking)
            self.think_count = prefix_sums(self.thinks)
            self.think_raw = prefix_sums(list(map(mul, tokens, self.thinks)))
            self.both_count = prefix_sums(both)
            self.both_raw = prefix_sums(list(map(mul, tokens, both)))
            self._think_at = [i for i, t in enumerate(self.thinks) if t]
        else:
            self.think_save = self.think_count = self.think_raw = zeros
            self.both_count = self.both_raw = zeros
            self._think_at = []
        # Thinking sent only within its turn (OpenAI's reasoning items): a request
        # leaves it out for the messages before its newest user turn.
        turn = sk.turn_thinking
        if turn and any(turn):
            self.turn_save = prefix_sums(list(map(min, turn, tokens)))
            self._newest_user: list[int] = newest_user_turns(sk)
        else:
            self.turn_save, self._newest_user = [], []
        # G: sent prefix when everything clearable is cleared; H: when nothing is.
        self.h = list(map(sub, self.raw, self.off_save)) if any_offloaded else self.raw
        self.g = list(map(sub, self.h, self.clear_save)) if any(clearable) else self.h
        if grown_from is not None and "kind_raw" in grown_from.__dict__:
            self.__dict__["kind_raw"] = [
                _carried(sums, tokens, self._kinds, kind, self._thinking)
                for kind, sums in enumerate(grown_from.kind_raw)
            ]

    def _carries_on(self, tokens: Sequence[int], kinds: Sequence[int]) -> bool:
        """Whether `tokens` and `kinds` begin with this accountant's, and it clears and
        offloads nothing."""
        n = len(self._tokens)
        if self.clear_count[-1] or self.off_count[-1] or self.think_count[-1]:
            return False
        return tokens[:n] == self._tokens and kinds[:n] == self._kinds[:n]

    def _sums_over(self, tokens: Sequence[int]) -> list[int]:
        return self.raw + list(accumulate(tokens[len(self._tokens) :], initial=self.raw[-1]))[1:]

    @cached_property
    def _clear_letters(self) -> str:
        return "".join(
            "o" if o else "c" if c else "k"
            for c, o in zip(self.clearable, self.offloaded, strict=True)
        )

    @cached_property
    def _kept_letters(self) -> str:
        return "".join("o" if o else "k" for o in self.offloaded)

    # Per-kind sums serve charts only: built on first use, not for every simulation.
    @cached_property
    def kind_raw(self) -> list[list[int]]:
        return _by_kind(self._tokens, self._kinds, [True] * len(self._tokens), self._thinking)

    @cached_property
    def kind_cleared(self) -> list[list[int]]:
        return _by_kind(self._tokens, self._kinds, self.clearable, self._thinking)

    @cached_property
    def kind_off(self) -> list[list[int]]:
        return _by_kind(self._tokens, self._kinds, self.offloaded, self._thinking)

    @cached_property
    def kind_thought(self) -> list[list[int]]:
        """Per kind, the messages whose thinking a plan can clear (whole, like kind_raw)."""
        return _by_kind(self._tokens, self._kinds, self.thinks or [False], self._thinking)

    @cached_property
    def kind_both(self) -> list[list[int]]:
        """Per kind, the messages both clearable and with clearable thinking."""
        both = list(map(and_, self.clearable, self.thinks)) if self.thinks else [False]
        return _by_kind(self._tokens, self._kinds, both, self._thinking)

    def turn_bound(self, end: int) -> int:
        """The newest user turn of the request whose history is [0, end): the turn-only
        thinking of the messages before it is not sent (0 when there is none)."""
        return self._newest_user[end] if self._newest_user else 0

    def span(self, a: int, b: int, cb: int, tb: int = 0, ub: int = 0) -> int:
        """Sent tokens of messages [a, b) when clearable ones before `cb` are cleared,
        the thinking of those before `tb` is, and the turn-only thinking of those
        before `ub` is left out."""
        if b <= a:
            return 0
        cs, off = self.clear_save, self.off_save
        # Conditional expressions, not min(): this runs several times per request.
        out = (
            self.raw[b]
            - self.raw[a]
            - cs[b if b < cb else cb]
            + cs[a if a < cb else cb]
            - off[b]
            + off[a]
        )
        if tb:
            ts = self.think_save
            out -= ts[b if b < tb else tb] - ts[a if a < tb else tb]
        if ub and self.turn_save:
            out -= self._turn_left_out(a, b, tb, ub)
        return out

    def _turn_left_out(self, a: int, b: int, tb: int, ub: int) -> int:
        """Turn-only thinking of messages [a, b) before `ub` that is not sent; before
        `tb` a cleared message's thinking is gone already, so not counted twice."""
        lo = tb if tb and self.thinks else 0
        us = self.turn_save
        return us[min(max(b, lo), ub)] - us[min(max(a, lo), ub)]

    def sent(self, plan: Plan) -> int:
        """Tokens of the whole request."""
        cb, tb = plan.clear_before, plan.thinking_before
        ub = self.turn_bound(plan.end)
        if plan.gap_end <= plan.gap_start:
            return self.span(0, plan.end, cb, tb, ub) + plan.extra
        return (
            self.span(0, plan.gap_start, cb, tb, ub)
            + plan.gap_note
            + self.span(plan.gap_end, plan.end, cb, tb, ub)
            + plan.extra
        )

    def prefix(self, plan: Plan, upto: int) -> int:
        """Tokens of the request up to message `upto` (exclusive), notes included."""
        cb, tb = plan.clear_before, plan.thinking_before
        ub = self.turn_bound(plan.end)
        if plan.gap_end <= plan.gap_start or upto <= plan.gap_start:
            return self.span(0, min(upto, plan.end), cb, tb, ub)
        return (
            self.span(0, plan.gap_start, cb, tb, ub)
            + plan.gap_note
            + self.span(plan.gap_end, min(upto, plan.end), cb, tb, ub)
        )

    def ranges(self, plan: Plan) -> tuple[tuple[int, int], ...]:
        if plan.gap_end <= plan.gap_start:
            return ((0, plan.end),)
        return ((0, plan.gap_start), (plan.gap_end, plan.end))

    def counts(self, plan: Plan) -> tuple[int, int, int, int]:
        """Messages cleared, truncated, summarized and offloaded in the request."""
        cleared = offloaded = 0
        cb, tb = plan.clear_before, plan.thinking_before
        for a, b in self.ranges(plan):
            cleared += self.clear_count[max(min(b, cb), a)] - self.clear_count[a]
            offloaded += self.off_count[b] - self.off_count[a]
            if tb:
                cleared += _within(self.think_count, a, b, tb)
                cleared -= _within(self.both_count, a, b, min(cb, tb))
        gap = max(plan.gap_end - plan.gap_start, 0)
        truncated = gap if plan.gap_kind == "t" else 0
        return cleared, truncated, gap - truncated, offloaded

    def composition(self, plan: Plan) -> dict[str, int]:
        """Tokens sent by disposition, and tokens removed, for one request."""
        cb, tb = plan.clear_before, plan.thinking_before
        cleared_raw = cleared_sent = off_raw = off_sent = 0
        for a, b in self.ranges(plan):
            c_hi = max(min(b, cb), a)
            cleared_raw += self.clear_raw[c_hi] - self.clear_raw[a]
            cleared_sent += (self.clear_raw[c_hi] - self.clear_raw[a]) - (
                self.clear_save[c_hi] - self.clear_save[a]
            )
            if tb:
                # Messages whose thinking is cleared are cleared too (once each).
                extra = _within(self.think_raw, a, b, tb) - _within(
                    self.both_raw, a, b, min(cb, tb)
                )
                cleared_raw += extra
                cleared_sent += extra - _within(self.think_save, a, b, tb)
            off_raw += self.off_raw[b] - self.off_raw[a]
            off_sent += (self.off_raw[b] - self.off_raw[a]) - (self.off_save[b] - self.off_save[a])
        gap_raw = self.raw[max(plan.gap_end, plan.gap_start)] - self.raw[plan.gap_start]
        summarized = plan.gap_kind == "s"
        return {
            "kept": self.sent(plan) - cleared_sent - off_sent - plan.gap_note - plan.extra,
            "cleared": cleared_sent,
            "offloaded": off_sent,
            "summary": plan.gap_note if summarized else 0,
            "notes": (0 if summarized else plan.gap_note) + plan.extra,
            "removed_cleared": cleared_raw - cleared_sent,
            "removed_offloaded": off_raw - off_sent,
            "removed_truncated": 0 if summarized else gap_raw,
            "removed_summarized": gap_raw if summarized else 0,
        }

    def kept_by_kind(self, plan: Plan) -> tuple[int, ...]:
        """Tokens of kept (unchanged) messages sent, per kind (model.KINDS order)."""
        cb, tb = plan.clear_before, plan.thinking_before
        ranges = self.ranges(plan)
        out = []
        for raw, cleared, off in zip(self.kind_raw, self.kind_cleared, self.kind_off, strict=True):
            total = 0
            for a, b in ranges:
                total += raw[b] - raw[a]
                if cleared[-1]:  # most kinds are never cleared: skip their lookups
                    c_hi = b if b < cb else (cb if cb > a else a)
                    total -= cleared[c_hi] - cleared[a]
                if off[-1]:
                    total -= off[b] - off[a]
            out.append(total)
        if tb and self.thinks:
            # A message whose thinking is cleared is not kept (counted once when it
            # is cleared before cb as well).
            for kind, (thought, both) in enumerate(
                zip(self.kind_thought, self.kind_both, strict=True)
            ):
                for a, b in ranges:
                    out[kind] -= _within(thought, a, b, tb) - _within(both, a, b, min(cb, tb))
        ub = self.turn_bound(plan.end)
        if ub and self.turn_save:  # not sent (as in span)
            for a, b in ranges:
                out[THINKING] -= self._turn_left_out(a, b, tb, ub)
        return tuple(out)

    def dispositions(self, plan: Plan) -> str:
        """One letter per message of the history: k kept, c cleared, t truncated,
        s summarized, o offloaded. O(end): only for reports that ask for it."""
        cb = plan.clear_before

        def piece(a: int, b: int) -> str:
            m = max(min(b, cb), a)
            return self._clear_letters[a:m] + self._kept_letters[m:b]

        if plan.gap_end <= plan.gap_start:
            letters = piece(0, plan.end)
        else:
            letters = (
                piece(0, plan.gap_start)
                + plan.gap_kind * (plan.gap_end - plan.gap_start)
                + piece(plan.gap_end, plan.end)
            )
        tb = min(plan.thinking_before, plan.end)
        if not tb or not self._think_at:
            return letters
        out = list(letters)
        for i in self._think_at[: bisect.bisect_left(self._think_at, tb)]:
            if out[i] == "k":
                out[i] = "c"
        return "".join(out)

    def disposition(self, plan: Plan, i: int) -> str:
        """The letter of message i in the request (see dispositions)."""
        if plan.gap_start <= i < plan.gap_end:
            return plan.gap_kind
        letter = self._clear_letters[i] if i < plan.clear_before else self._kept_letters[i]
        if letter == "k" and i < plan.thinking_before and self.thinks and self.thinks[i]:
            return "c"
        return letter

    def edits(self, plan: Plan, i: int) -> tuple[bool, bool]:
        """How message i is edited in the request: (its body cleared, its thinking
        cleared). Either makes its disposition "c"; both break a prompt cache where
        they change (see cached). A message left out (gap) has no edits."""
        if plan.gap_start <= i < plan.gap_end:
            return False, False
        body = i < plan.clear_before and self._clear_letters[i] == "c"
        thinking = i < plan.thinking_before and bool(self.thinks) and self.thinks[i]
        return body, thinking

    def cached(self, before: Plan, after: Plan) -> int:
        """Tokens at the start of request `after` identical to request `before` (same
        messages, edits and notes): what a prompt cache can reuse.

        A message's edits are its body cleared (clear_before) and its thinking cleared
        (thinking_before); a change of either breaks the cache at that message, even
        where its disposition ("c" for either clearing) and its tokens stay the same
        (clearing the inputs of calls whose arguments were "{}")."""
        # Plan fields 1-5: gap_start, gap_end, gap_kind, gap_note, clear_before.
        same_thinking = before.thinking_before == after.thinking_before
        if before[1:6] == after[1:6] and same_thinking:
            # The common case: the request only grew.
            return self.prefix(after, before.end)
        if (
            before.clear_before == after.clear_before
            and same_thinking
            and before[3:5] == after[3:5]
            and before.gap_start == after.gap_start < after.gap_end
            and before.gap_start < before.gap_end
        ):
            # A moving cut: the head and the note are still shared.
            return self.span(0, after.gap_start, after.clear_before, after.thinking_before) + (
                after.gap_note
            )
        change = self._first_change(before, after)
        gb, ga = _gap(before), _gap(after)
        if gb == ga:
            if ga[1] > ga[0] and ga[0] <= change < ga[1]:
                # Clearing changed only inside the shared gap: nobody sees it.
                change = self._first_change(before, after, ga[1])
            return self.prefix(after, min(change, before.end))
        same_note = gb[0] == ga[0] and gb[2:] == ga[2:] and ga[1] > ga[0] and gb[1] > gb[0]
        if same_note and change >= ga[0]:
            # Only where the gap ends moved: the head and the note are still shared.
            return self.span(0, ga[0], after.clear_before, after.thinking_before) + after.gap_note
        start = min(_gap_start(before), _gap_start(after), change, before.end)
        return self.prefix(after, start)

    def _first_change(self, before: Plan, after: Plan, start: int = 0) -> int:
        """The first message at or after `start` cleared, or its thinking cleared, in one
        plan and not the other (len + 1 when none)."""
        change = self._first_clear_change(before, after, start)
        lo, hi = sorted((before.thinking_before, after.thinking_before))
        lo = max(lo, start)
        if hi > lo and self.think_count[hi] != self.think_count[lo]:
            found = bisect.bisect_right(self.think_count, self.think_count[lo]) - 1
            change = min(change, found)
        return change

    def _first_clear_change(self, before: Plan, after: Plan, start: int = 0) -> int:
        """The first message at or after `start` cleared in one plan and not the other
        (len + 1 when none)."""
        lo, hi = sorted((before.clear_before, after.clear_before))
        lo = max(lo, start)
        if hi <= lo or self.clear_count[hi] == self.clear_count[lo]:
            return len(self.raw)
        return bisect.bisect_right(self.clear_count, self.clear_count[lo]) - 1


def _gap(plan: Plan) -> tuple[int, int, int, str]:
    if plan.gap_end <= plan.gap_start:
        return (0, 0, 0, "")
    return (plan.gap_start, plan.gap_end, plan.gap_note, plan.gap_kind)


def _gap_start(plan: Plan) -> int:
    return plan.gap_start if plan.gap_end > plan.gap_start else plan.end


def _within(sums: list[int], a: int, b: int, limit: int) -> int:
    """The sum over messages [a, min(b, limit)) of the values whose prefix sums are
    `sums` (0 when the range is empty)."""
    hi = b if b < limit else limit
    return sums[hi] - sums[a] if hi > a else 0
