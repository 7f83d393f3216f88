"""`as_logged`: what the agent really sent, the baseline every what-if is compared with.

A log holds every message the agent ever had, but not every message was sent at every
request: after a compaction (Claude Code's ``compact_boundary`` and the
``isCompactSummary`` message that follows it; Codex's ``compacted`` record and its
``replacement_history``) the requests carry the leading system messages, the summary
and what came after it, and nothing before. The importers record each such compaction
(model.Compaction) before the summary message; this policy applies them.

Units: indexes are messages; no tokens are decided here (nothing is cut for a budget:
what was sent was sent, over budget or not).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from contextsim.policies.base import Context, Plan, plain_accounts
from contextsim.policies.cuts import leading_system


@dataclass(frozen=True, slots=True)
class LoggedParams:
    """as_logged has nothing to tune: it is what happened."""


class LoggedPlanner:
    """Per request: the newest logged compaction inside its history drops every message
    between the leading system messages and the compaction's summary. O(log C)."""

    def __init__(self, ctx: Context, params: LoggedParams) -> None:
        sk = self.sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(sk)
        self.head = leading_system(sk)
        self.boundaries = sorted(b for b in sk.compactions if b > self.head)

    def plan(self, end: int) -> Plan:
        # The summary at boundary b is in the history of request `end` when b < end.
        i = bisect_left(self.boundaries, end) - 1
        if i < 0:
            return Plan(end)
        return Plan(end, self.head, self.boundaries[i], "s", 0, stage="summarize")


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
