"""`as_logged`: what the agent really sent, the baseline every what-if is compared with.

A log holds every message the agent ever had, but not every message was sent at every
request: after a compaction (Claude Code's ``compact_boundary`` and the
``isCompactSummary`` message that follows it; Codex's ``compacted`` record and its
``replacement_history``) the requests carry the leading system messages, the summary
and what came after it, and nothing before. The importers record each such compaction
(model.Compaction) before the summary message; this policy applies them. Where the log
holds each request whole and shows messages the agent sent shortened (SWE-agent's
history processors; model.Elision), those are sent as the log shows them: cleared, at
their shortened size, from the request on which they first were.

Units: indexes are messages; no tokens are decided here (nothing is cut for a budget:
what was sent was sent, over budget or not).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from contextsim.counting.memory import per_skeleton
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.accounting import Accountant
from contextsim.engine.cuts import leading_system
from contextsim.engine.policy import Context, Plan, Statics, no_statics, plain_accounts


@dataclass(frozen=True, slots=True)
class LoggedParams:
    """as_logged has nothing to tune: it is what happened."""


class LoggedPlanner:
    """Per request: the newest logged compaction inside its history drops every message
    between the leading system messages and the compaction's summary. O(log C)."""

    def __init__(self, ctx: Context, params: LoggedParams) -> None:
        sk = self.sk = ctx.skeleton
        self.statics, self.acct = elided_accounts(sk) if sk.elisions else plain_accounts(sk)
        self.head = leading_system(sk)
        self.boundaries = sorted(b for b in sk.compactions if b > self.head)
        self.firsts, self.cuts = _clear_steps(sk)

    def plan(self, end: int) -> Plan:
        cleared = 0
        if self.firsts:
            k = bisect_right(self.firsts, bisect_left(self.sk.ends, end)) - 1
            cleared = self.cuts[k] if k >= 0 else 0
        # The summary at boundary b is in the history of request `end` when b < end.
        i = bisect_left(self.boundaries, end) - 1
        if i < 0:
            return Plan(end, clear_before=cleared, stage="clear" if cleared else "none")
        return Plan(end, self.head, self.boundaries[i], "s", 0, cleared, stage="summarize")


def elided_accounts(sk: Skeleton) -> tuple[Statics, Accountant]:
    """Statics where the elided messages are the clearable ones, at their size as sent,
    and their Accountant; made once per skeleton."""

    def make() -> tuple[Statics, Accountant]:
        statics = no_statics(sk.size)
        for message, _, tokens in sk.elisions:
            statics.clearable[message] = True
            statics.cleared_tokens[message] = tokens
        return statics, Accountant(sk, statics)

    return per_skeleton(sk, "elided_accounts", make)


def _clear_steps(sk: Skeleton) -> tuple[list[int], list[int]]:
    """The steps at which more messages are first sent shortened, and for each the
    clear_before that covers every message shortened by then."""
    firsts: list[int] = []
    cuts: list[int] = []
    for message, step, _ in sorted(sk.elisions, key=lambda e: e[1]):
        reach = max(message + 1, cuts[-1] if cuts else 0)
        if firsts and firsts[-1] == step:
            cuts[-1] = reach
        else:
            firsts.append(step)
            cuts.append(reach)
    return firsts, cuts


class LoggedPolicy:
    """Replays the log: every request as the agent sent it, the log's own compactions
    applied. The default policy of a run and the baseline of every comparison.

    Source: the log itself (Claude Code ``compact_boundary`` + ``isCompactSummary``,
    Codex ``compacted`` + ``replacement_history``). Formats whose every request is
    logged whole are replayed exactly as they are."""

    name = "as_logged"
    label = "as_logged: what the agent sent, its compactions applied (the log)"
    source = "the log: its compactions and exact requests"
    Params = LoggedParams

    def setup(self, ctx: Context, params: LoggedParams) -> LoggedPlanner:
        return LoggedPlanner(ctx, params)

    def replacements(self, params: LoggedParams) -> dict[str, str]:
        return {}
