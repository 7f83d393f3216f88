"""The seed system's policies: `none`, `turns` (before its fix) and `mythex` (after).

Source: the Mythex incident write-up (DESIGN.md seeds): subagents grew until every
request was rejected because the context was cut only at user-turn starts; the fix
fits requests in three stages: clear old tool results (in batches of 4, newest results
within a quarter of the budget kept whole, small results left alone), keep whole user
turns, keep whole tool rounds.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from contextsim.accounting import Accountant
from contextsim.estimators import MESSAGE_OVERHEAD
from contextsim.policies.base import Context, Plan, Statics, no_statics
from contextsim.policies.cuts import Cuts, head_end, round_starts, turn_starts, violations
from contextsim.skeleton import Skeleton

TRUNCATION_NOTE = (
    "[Earlier parts of this conversation were left out to keep it within the model's "
    "context. The first message and the most recent exchanges are shown in full.]"
)
CLEARED_NOTE = (
    "[This tool result was cleared to keep the conversation within the model's context. "
    "Run the tool again if you need its output.]"
)
REJECTION_MESSAGE = (
    "This conversation has grown too long for the model to read in one request. Start a "
    "new chat for the next step: nothing you have built so far will be lost."
)


@dataclass(frozen=True, slots=True)
class NoneParams:
    pass


class NonePlanner:
    def __init__(self, sk: Skeleton) -> None:
        self.statics = no_statics(sk.size)

    def plan(self, end: int) -> Plan:
        return Plan(end)


class NonePolicy:
    """Send the whole history every time: the baseline that shows where a run would be
    rejected."""

    name = "none"
    label = "none: send everything"
    source = "baseline"
    Params = NoneParams

    def setup(self, ctx: Context, params: NoneParams) -> NonePlanner:
        return NonePlanner(ctx.skeleton)


@dataclass(frozen=True, slots=True)
class TurnsParams:
    pass


class TurnCutter:
    """Shared by `turns` and `mythex`: cut at user-turn starts or at tool rounds."""

    def __init__(self, ctx: Context, statics: Statics) -> None:
        sk = ctx.skeleton
        self.statics = statics
        self.acct = Accountant(sk, statics)
        self.budget = ctx.budget
        self.head = head_end(sk)
        self.note = ctx.count(TRUNCATION_NOTE) + MESSAGE_OVERHEAD
        turns = turn_starts(sk, self.head)
        rounds = round_starts(sk, self.head)
        self.turns = Cuts(self.acct, turns, violations(sk, turns))
        self.rounds = Cuts(self.acct, rounds, violations(sk, rounds))

    def cut(self, cuts: Cuts, end: int, cb: int, stage: str) -> Plan | None:
        room = self.budget - self.acct.span(0, self.head, cb) - self.note
        c = cuts.fitting(end, cb, room)
        if c is None:
            return None
        return Plan(end, self.head, c, "t", self.note, cb, stage=stage)

    def newest(self, cuts: Cuts, end: int, cb: int, stage: str) -> Plan | None:
        c = cuts.newest(end)
        if c is None or c <= self.head:
            return None
        return Plan(end, self.head, c, "t", self.note, cb, stage=stage)


class TurnsPlanner(TurnCutter):
    def plan(self, end: int) -> Plan:
        if self.acct.raw[end] <= self.budget:
            return Plan(end)
        # No turn fits: the newest turn is sent whole; a run with one user message
        # (a subagent) cannot be cut at all and grows until it is rejected.
        return (
            self.cut(self.turns, end, 0, "turns")
            or self.newest(self.turns, end, 0, "turns")
            or Plan(end, stage="turns")
        )


class TurnsPolicy:
    """If over budget: keep the first message, a note, and the newest whole user turns
    that fit (the seed system before its fix)."""

    name = "turns"
    label = "turns: keep whole user turns (seed, before the fix)"
    source = "Mythex incident write-up: the original trimming"
    Params = TurnsParams

    def setup(self, ctx: Context, params: TurnsParams) -> TurnsPlanner:
        return TurnsPlanner(ctx, no_statics(ctx.skeleton.size))


@dataclass(frozen=True, slots=True)
class MythexParams:
    keep_fraction: float = 0.25
    """Newest tool results within this share of the budget stay whole (at least one)."""
    keep_results: int | None = None
    """Keep this many newest results instead (the older fixed-6 variant: 6)."""
    batch: int = 4
    """Results are cleared in batches of this many, so the cached prefix lasts."""
    small_factor: float = 2.0
    """A result at most this many times the note's size is left alone."""


class MythexPlanner(TurnCutter):
    def __init__(self, ctx: Context, params: MythexParams) -> None:
        sk = ctx.skeleton
        note = ctx.count(CLEARED_NOTE)
        cleared = [MESSAGE_OVERHEAD + n * note for n in sk.result_count]
        clearable = [
            n > 0 and t - MESSAGE_OVERHEAD > params.small_factor * n * note
            for n, t in zip(sk.result_count, sk.tokens, strict=True)
        ]
        super().__init__(ctx, Statics(clearable, cleared))
        self.params = params
        self.results = [i for i, n in enumerate(sk.result_count) if n > 0]
        self.result_sums = [0]
        for i in self.results:
            self.result_sums.append(self.result_sums[-1] + sk.tokens[i])
        self.clear_pos = [i for i, f in enumerate(self.acct.clearable) if f]
        self.quarter = params.keep_fraction * ctx.budget

    def clear_boundary(self, end: int) -> int:
        """clear_before for history [0, end): every clearable result older than the
        newest ones kept whole, the count rounded up to a whole batch."""
        n = bisect.bisect_left(self.results, end)
        if n == 0:
            return 0
        if self.params.keep_results is not None:
            first_kept = max(n - max(self.params.keep_results, 1), 0)
        else:
            need = self.result_sums[n] - self.quarter
            first_kept = min(bisect.bisect_left(self.result_sums, need, 0, n), n - 1)
        older = bisect.bisect_left(self.clear_pos, self.results[first_kept])
        available = bisect.bisect_left(self.clear_pos, self.results[n - 1])
        batch = max(self.params.batch, 1)
        count = min(-(-older // batch) * batch, available)
        return self.clear_pos[count - 1] + 1 if count else 0

    def plan(self, end: int) -> Plan:
        if self.acct.raw[end] <= self.budget:
            return Plan(end)
        cb = self.clear_boundary(end)
        if self.acct.span(0, end, cb) <= self.budget:
            return Plan(end, clear_before=cb, stage="clear")
        return (
            self.cut(self.turns, end, cb, "turns")
            or self.cut(self.rounds, end, cb, "rounds")
            or self.newest(self.rounds, end, cb, "rounds")
            or Plan(end, clear_before=cb, stage="rounds")
        )


class MythexPolicy:
    """Three stages, each tried only when the one before did not fit: clear the oldest
    tool results, keep whole user turns, keep whole tool rounds (the seed system after
    its fix)."""

    name = "mythex"
    label = "mythex: clear results, then turns, then rounds (seed, after the fix)"
    source = "Mythex incident write-up: the fix"
    Params = MythexParams

    def setup(self, ctx: Context, params: MythexParams) -> MythexPlanner:
        return MythexPlanner(ctx, params)
