"""The seed system's policies: `none`, `turns` (before its fix) and `mythex` (after).

Source: the Mythex incident write-up (DESIGN.md seeds): subagents grew until every
request was rejected because the context was cut only at user-turn starts; the fix
fits requests in three stages: clear old tool results (in batches of 4, newest results
within a quarter of the budget kept whole, small results left alone), keep whole user
turns, keep whole tool rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from itertools import accumulate

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.counting.memory import per_skeleton
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.accounting import Accountant
from contextsim.engine.cuts import Cuts, head_end, round_starts, turn_starts, violations
from contextsim.engine.policy import Context, Plan, Statics, no_statics

TRUNCATION_NOTE = (
    "[Earlier parts of this conversation were left out to keep it within the model's "
    "context. The first message and the most recent exchanges are shown in full.]"
)
CLEARED_NOTE = (
    "[This tool result was cleared to keep the conversation within the model's context. "
    "Run the tool again if you need its output.]"
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

    def replacements(self, params: NoneParams) -> dict[str, str]:
        return {}


@dataclass(frozen=True, slots=True)
class TurnsParams:
    pass


class Layout:
    """What `turns` and `mythex` prepare before the first request: prefix sums, the
    head, and the safe cut points. Independent of the budget, so kept per skeleton."""

    def __init__(self, ctx: Context, statics: Statics) -> None:
        sk = ctx.skeleton
        self.statics = statics
        self.acct = Accountant(sk, statics)
        self.head = head_end(sk)
        self.note = ctx.count(TRUNCATION_NOTE) + MESSAGE_OVERHEAD
        self.head_tokens = self.acct.span(0, self.head, 0)
        # A clear boundary at or below this index leaves the head whole (the usual case).
        self.first_clearable = next(
            (i for i in range(self.head) if self.acct.clearable[i]), sk.size + 1
        )
        turns = turn_starts(sk, self.head)
        rounds = round_starts(sk, self.head)
        self.turns = Cuts(self.acct, turns, violations(sk, turns))
        self.rounds = Cuts(self.acct, rounds, violations(sk, rounds))
        self.results = [i for i, n in enumerate(sk.result_count) if n > 0]
        self.result_sums = list(accumulate((sk.tokens[i] for i in self.results), initial=0))
        self.clear_pos = [i for i, f in enumerate(self.acct.clearable) if f]


class TurnCutter:
    """Shared by `turns` and `mythex`: cut at user-turn starts or at tool rounds."""

    def __init__(self, ctx: Context, key: Hashable, statics: Callable[[], Statics]) -> None:
        layout = per_skeleton(ctx.skeleton, key, lambda: Layout(ctx, statics()))
        self.layout = layout
        self.statics = layout.statics
        self.acct = layout.acct
        self.budget = ctx.budget
        self.head = layout.head
        self.note = layout.note
        self.head_tokens = layout.head_tokens
        self.first_clearable = layout.first_clearable
        self.turns = layout.turns
        self.rounds = layout.rounds

    def cut(
        self, cuts: Cuts, end: int, cb: int, stage: str, total: int | None = None
    ) -> Plan | None:
        head = self.head_tokens if cb <= self.first_clearable else self.acct.span(0, self.head, cb)
        c = cuts.fitting(end, cb, self.budget - head - self.note, total)
        if c is None:
            return None
        return Plan(end, self.head, c, "t", self.note, cb, 0, stage)

    def newest(self, cuts: Cuts, end: int, cb: int, stage: str) -> Plan | None:
        c = cuts.newest(end)
        if c is None or c <= self.head:
            return None
        return Plan(end, self.head, c, "t", self.note, cb, 0, stage)


class TurnsPlanner(TurnCutter):
    def plan(self, end: int) -> Plan:
        if self.acct.raw[end] <= self.budget:
            return Plan(end)
        # No turn fits: the newest turn is sent whole; a run with one user message
        # (a subagent) cannot be cut at all and grows until it is rejected.
        total = self.acct.raw[end]
        return (
            self.cut(self.turns, end, 0, "turns", total)
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
        return TurnsPlanner(ctx, ("turns",), lambda: no_statics(ctx.skeleton.size))

    def replacements(self, params: TurnsParams) -> dict[str, str]:
        return {"t": TRUNCATION_NOTE}


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

    def __post_init__(self) -> None:
        if not 0 < self.keep_fraction <= 1:
            raise ValueError(f"keep_fraction must be in (0, 1], got {self.keep_fraction}")
        if self.batch < 1:
            raise ValueError(f"batch must be at least 1, got {self.batch}")


class MythexPlanner(TurnCutter):
    def __init__(self, ctx: Context, params: MythexParams) -> None:
        sk = ctx.skeleton

        def statics() -> Statics:
            note = ctx.count(CLEARED_NOTE)
            cleared = [MESSAGE_OVERHEAD + n * note for n in sk.result_count]
            clearable = [
                n > 0 and t - MESSAGE_OVERHEAD > params.small_factor * n * note
                for n, t in zip(sk.result_count, sk.tokens, strict=True)
            ]
            return Statics(clearable, cleared)

        super().__init__(ctx, ("mythex", params.small_factor), statics)
        self.params = params
        self.results = self.layout.results
        self.result_sums = self.layout.result_sums
        self.clear_pos = self.layout.clear_pos
        self.quarter = params.keep_fraction * ctx.budget
        self.batch = max(params.batch, 1)
        self._end = self._n = self._kept = self._older = self._available = 0

    def clear_boundary(self, end: int) -> int:
        """clear_before for history [0, end): every clearable result older than the
        newest ones kept whole, the count rounded up to a whole batch.

        Requests come in order, and every position below only moves forward as the
        history grows, so the positions are carried from call to call (amortized O(1));
        a call for a shorter history starts them again from zero."""
        if end < self._end:
            self._n = self._kept = self._older = self._available = 0
        self._end = end
        results, sums, clear_pos = self.results, self.result_sums, self.clear_pos
        n = self._n
        while n < len(results) and results[n] < end:
            n += 1
        self._n = n
        if n == 0:
            return 0
        if self.params.keep_results is not None:
            first_kept = max(n - max(self.params.keep_results, 1), 0)
        else:
            # The oldest result of the newest ones that fit in the quarter (at least one).
            need = sums[n] - self.quarter
            first_kept = self._kept
            while first_kept < n - 1 and sums[first_kept] < need:
                first_kept += 1
            self._kept = first_kept
        size, limit = len(clear_pos), results[first_kept]
        older = self._older
        while older < size and clear_pos[older] < limit:
            older += 1
        limit = results[n - 1]
        available = max(self._available, older)
        while available < size and clear_pos[available] < limit:
            available += 1
        self._older, self._available = older, available
        count = min(-(-older // self.batch) * self.batch, available)
        return clear_pos[count - 1] + 1 if count else 0

    def plan(self, end: int) -> Plan:
        if self.acct.raw[end] <= self.budget:
            return Plan(end)
        cb = self.clear_boundary(end)
        total = self.acct.span(0, end, cb, ub=self.acct.turn_bound(end))
        if total <= self.budget:
            return Plan(end, 0, 0, "t", 0, cb, 0, "clear")
        return (
            self.cut(self.turns, end, cb, "turns", total)
            or self.cut(self.rounds, end, cb, "rounds", total)
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

    def replacements(self, params: MythexParams) -> dict[str, str]:
        return {"t": TRUNCATION_NOTE, "c": CLEARED_NOTE}
