"""Claude Code's context policies: auto-compact (a summary once the window is nearly
full, stateful) and time-based microcompaction (old results of bulky tools cleared
after an idle gap).
"""

from __future__ import annotations

from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.condensing import (
    RESULT,
    SUMMARY_NOTE,
    logged_usage,
    logged_usages,
    run_window,
)
from contextsim.engine.cuts import leading_system
from contextsim.engine.policy import Context, Plan, plain_accounts
from contextsim.systems.claude_code.rules import OUTPUT_CAP, version_of


@dataclass(frozen=True, slots=True)
class ClaudeCodeParams:
    window: int | None = None
    """The session's window (None: the one Claude Code ran it on, rules.session_window,
    as the import found it; else the model's from genai-prices; else 200,000)."""
    threshold: int | None = None
    """Tokens at which it compacts (None: what the log's first automatic compaction
    reveals; else the version's rule, window - reserved output - buffer)."""
    max_output: int = 32_000
    """Output tokens reserved against the window: from Claude Code 2.1 at most 20,000
    of them (`capped_output`), before that all of them."""
    buffer: int = 13_000
    """Tokens kept free below the effective window: the threshold is window - reserved
    output - buffer: 167,000 on a 200k model from 2.1, 155,000 before."""
    capped_output: bool | None = None
    """Whether the reserve is capped at 20,000 (None: as the log's version does: from
    2.1 on, and when the log names no version)."""
    summary_tokens: int = 3_000
    """Tokens of the summary (an assumption)."""


def revealed_threshold(sk: Skeleton) -> int | None:
    """The threshold the log's first automatic compaction reveals: it fired at its
    preTokens and not at the measured request before it, so the threshold lies
    between the two: their midpoint (tokens). None without such a compaction."""
    triggers = sk.compaction_triggers or ("",) * len(sk.compactions)
    pre = sk.compaction_pre_tokens or (None,) * len(sk.compactions)
    for boundary, trigger, tokens in sorted(zip(sk.compactions, triggers, pre, strict=True)):
        if trigger != "auto" or not tokens:
            continue
        before = [
            u.context
            for r, u in zip(sk.responses, sk.usage, strict=True)
            if r is not None and r < boundary and u is not None and u.context <= tokens
        ]
        return (before[-1] + tokens) // 2 if before else tokens
    return None


def claude_code_threshold(sk: Skeleton, params: ClaudeCodeParams) -> tuple[int, str]:
    """(threshold in tokens, where it comes from) for this run and these params."""
    if params.threshold:
        return params.threshold, "set"
    revealed = revealed_threshold(sk)
    if revealed is not None and not params.window:
        return revealed, "revealed by the log's automatic compaction"
    window = params.window or run_window(sk, 200_000)
    capped = params.capped_output
    if capped is None:
        parsed = version_of(sk.harness_version)
        capped = not (parsed and parsed < (2, 1))
    reserve = min(params.max_output, OUTPUT_CAP) if capped else params.max_output
    rule = window - reserve - params.buffer
    peak = _uncompacted_peak(sk)
    if not params.window and peak >= rule:
        return peak + 1, f"above the log's largest request ({peak:,}), which did not compact"
    return rule, "the version's rule"


def _uncompacted_peak(sk: Skeleton) -> int:
    """The largest measured request of a log with no automatic compaction (0 for one
    with one): the real threshold was above it."""
    triggers = sk.compaction_triggers or ("",) * len(sk.compactions)
    if any(t != "manual" for t in triggers):
        return 0
    return max((u.context for u in logged_usages(sk).values()), default=0)


class ClaudeCodePlanner:
    """Before a request at or over the threshold, everything but the system prompt and
    the newest exchange (the user's message, or the last call and its results) becomes
    one summary. A compaction that leaves the request over the threshold is not
    repeated until a request is under it: a session that starts above it (resumed)
    compacts once, not at every request. Until
    it has compacted, a request the log measured is as large as measured. O(1) per
    request."""

    def __init__(self, ctx: Context, params: ClaudeCodeParams) -> None:
        sk = self.sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(sk)
        self.head = leading_system(sk)
        self.threshold, _ = claude_code_threshold(sk, params)
        self.note = MESSAGE_OVERHEAD + params.summary_tokens
        self.provider = ctx.provider
        self.boundary = 0
        self.armed = True  # no compaction since a request was last under the threshold

    def _plan(self, end: int) -> Plan:
        if not self.boundary:
            return Plan(end)
        return Plan(end, self.head, self.boundary, "s", self.note, stage="summarize")

    def _size(self, plan: Plan, end: int) -> int:
        last = end - 1
        logged = None if self.boundary else logged_usage(self.sk, last + 1)
        return logged.context if logged is not None else self.provider(self.acct.sent(plan))

    def plan(self, end: int) -> Plan:
        plan = self._plan(end)
        over = self._size(plan, end) >= self.threshold
        if over and self.armed and end > 0:
            last = end - 1
            call = self.sk.answers[last] if self.sk.kinds[last] == RESULT else -1
            cut = call if call >= 0 else last
            if cut > max(self.boundary, self.head):
                self.boundary = cut
                plan = self._plan(end)
                # Still over once compacted (an unlogged part this large): no use
                # compacting again until a request is under.
                self.armed = self.provider(self.acct.sent(plan)) < self.threshold
                return plan
        self.armed = self.armed or not over
        return plan


class ClaudeCodePolicy:
    """Claude Code's auto-compact: at window - 33,000 tokens (by default), the
    conversation is replaced by a summary, sent as a user message after the system
    prompt, and goes on from there.

    Source: Claude Code is closed source; the window and the threshold follow
    contextsim.systems.claude_code.rules (its CHANGELOG and public analyses of its code:
    effective window = window - min(max output, 20,000) from 2.1, the whole max output
    before, less a 13,000-token buffer; real 2.0.x sessions compact at about 155k,
    2.1.x at about 167k), or what the log's own automatic compaction reveals. It
    decides on the measured size while the log's requests are its own, then on the
    provider's count (the reconciled size). Not modelled: the files
    it reads back in after compacting (up to 50,000 tokens), CLAUDE.md, microcompaction
    of old tool results (claude_code_microcompact)."""

    name = "claude_code_auto_compact"
    label = "claude_code_auto_compact: summarize at its threshold (Claude Code)"
    source = "Claude Code auto-compact (public analyses)"
    Params = ClaudeCodeParams

    def setup(self, ctx: Context, params: ClaudeCodeParams) -> ClaudeCodePlanner:
        return ClaudeCodePlanner(ctx, params)

    def trigger(self, sk: Skeleton, params: ClaudeCodeParams) -> tuple[int, str]:
        """(tokens at which it compacts, where that figure comes from)."""
        return claude_code_threshold(sk, params)

    def replacements(self, params: ClaudeCodeParams) -> dict[str, str]:
        return {"s": SUMMARY_NOTE}
