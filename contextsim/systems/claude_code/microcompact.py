"""Claude Code's time-based microcompaction, approximately: after an idle gap, the
content of all but the newest few results of its bulky tools is cleared.

Claude Code is closed source; everything here comes from public analyses of its
bundled code, not from its source or documentation (see MicrocompactPolicy). Units:
minutes for the gap, tool results (not messages) for `keep_recent`, tokens under the
run's estimator; indexes are messages.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.counting.skeleton import Skeleton, prefix_sums
from contextsim.engine.accounting import Accountant
from contextsim.engine.policy import Context, Plan, Statics

CLEARED = "[Old tool result content cleared]"
COMPACTABLE = (
    "Read",
    "Bash",
    "PowerShell",
    "Grep",
    "Glob",
    "WebSearch",
    "WebFetch",
    "Edit",
    "Write",
)
"""The tools whose results microcompaction clears (COMPACTABLE_TOOLS in analyses of
Claude Code's services/compact/microCompact.ts: file read, the shells, grep, glob, web
search, web fetch, file edit, file write)."""


def idle_gaps(sk: Skeleton) -> list[float | None]:
    """Per message i, seconds from the newest assistant message before it to message i
    (when a request ending at i is made), None when either has no logged time or there
    is no assistant message before it. O(M)."""
    out: list[float | None] = []
    last: float | None = None
    seen = False
    times = sk.times
    for i in range(sk.size):
        now = times[i] if times else None
        out.append(now - last if now is not None and last is not None and seen else None)
        if sk.roles[i] == "assistant":
            seen, last = True, now
    return out


@dataclass(frozen=True, slots=True)
class MicrocompactParams:
    gap_minutes: float = 60
    """Idle minutes since the last assistant message past which it fires (the 1-hour
    prompt-cache lifetime: once the cache is cold, clearing costs no cache)."""
    keep_recent: int = 5
    """The newest compactable tool results kept whole (at least 1 is always kept)."""
    compactable_tools: tuple[str, ...] = COMPACTABLE
    """Tools whose results may be cleared (empty: every tool's)."""


class MicrocompactPlanner:
    """Before a request made more than `gap_minutes` after the last answer, clear every
    compactable result but the newest `keep_recent`; cleared results stay cleared and
    results arriving later stay whole until the next idle gap. O(log M) per request."""

    def __init__(self, ctx: Context, params: MicrocompactParams) -> None:
        sk = ctx.skeleton
        tools = set(params.compactable_tools)
        clearable = [
            n > 0 and (not tools or all(t in tools for t in names.split(",") if t))
            for n, names in zip(sk.result_count, sk.tool_names, strict=True)
        ]
        note = ctx.count(CLEARED)
        self.statics = Statics(clearable, [MESSAGE_OVERHEAD + n * note for n in sk.result_count])
        self.acct = Accountant(sk, self.statics)
        self.positions = [i for i, c in enumerate(clearable) if c]
        self.units = prefix_sums([sk.result_count[i] for i in self.positions])
        # The main agent only: a subagent's requests never microcompact.
        self.gaps = [] if sk.subagent or not sk.times else idle_gaps(sk)
        self.gap = params.gap_minutes * 60
        self.keep = max(1, params.keep_recent)
        self.clear_before = 0

    def _boundary(self, end: int) -> int:
        """clear_before that clears every compactable result message of [0, end) older
        than the one holding the first of its newest `keep` compactable results."""
        n = bisect.bisect_left(self.positions, end)
        first_kept = self.units[n] - self.keep
        if first_kept <= 0:
            return 0
        m = bisect.bisect_right(self.units, first_kept) - 1  # holds the first kept result
        return self.positions[m - 1] + 1 if m else 0

    def plan(self, end: int) -> Plan:
        if self.gaps and end > 0:
            gap = self.gaps[end - 1]
            if gap is not None and gap > self.gap:
                self.clear_before = max(self.clear_before, self._boundary(end))
        if not self.clear_before:
            return Plan(end)
        return Plan(end, clear_before=self.clear_before, stage="clear")


class MicrocompactPolicy:
    """Claude Code's time-based microcompaction (approximate): when a request is made
    more than 60 minutes after the last assistant message, the content of every result
    of Read, Bash, Grep, Glob, WebSearch, WebFetch, Edit and Write but the newest 5 is
    replaced by "[Old tool result content cleared]"; the calls stay.

    Source: reverse engineering, not source or documentation. Public analyses of
    Claude Code's bundled services/compact/microCompact.ts (the time-based path,
    maybeTimeBasedMicrocompact: gapThresholdMinutes 60, keepRecent 5 as at least 1, the
    COMPACTABLE_TOOLS set, the placeholder, main thread only) as reported in
    tetsuo-ai/agenc-core PR 463, lijunzh/koda PR 660 and the koda-core microcompact
    docs; anthropics/claude-code issue 57788 (users seeing results cleared). One such
    analysis says the time-based path is off unless a server-side feature flag turns it
    on for the account: real sessions may never do this.
    Approximate: the gap is the run's logged times (the request's last message against
    the newest assistant message before it); a run without times never fires, nor does
    a subagent. A message answering several calls is cleared whole, and only when all
    its tools are compactable. Not modelled: the cached path (cache_edits, which the
    API applies server-side and the log never shows)."""

    name = "claude_code_microcompact"
    label = "claude_code_microcompact: approximate, clear old tool results after 60 idle minutes"
    source = "Claude Code microcompaction (approximate, public analyses)"
    Params = MicrocompactParams

    def setup(self, ctx: Context, params: MicrocompactParams) -> MicrocompactPlanner:
        return MicrocompactPlanner(ctx, params)

    def replacements(self, params: MicrocompactParams) -> dict[str, str]:
        return {"c": CLEARED}
