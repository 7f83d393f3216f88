"""Codex CLI's context policy: auto-compaction past `model_auto_compact_token_limit`
(90% of the window by default), stateful.

How Codex decides (openai/codex codex-rs/core, read at 0.65-0.104): after each
response it takes the response's total tokens (input and output, as the API measured
them) and adds its own estimate of the encrypted reasoning items that come before the
newest user message (the API does not send those back, so they are not in the measured
input, but Codex keeps them in its history): per item, (3/4 x the base64 length - 650)
bytes, 4 bytes a token. At `model_auto_compact_token_limit` or more it compacts before
the next request. The limit defaults to 90% of the model's window (272,000 for gpt-5:
244,800); the rollouts state the window as 95% of it (`model_context_window` 258,400),
the part Codex lets a request fill.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.counting.skeleton import Skeleton, newest_user_turns, prefix_sums
from contextsim.engine.condensing import logged_usage, logged_usages, run_window
from contextsim.engine.cuts import leading_system
from contextsim.engine.policy import Context, Plan, plain_accounts

CODEX_SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process."
)
"""The opening of the user message Codex puts before the summary (abridged)."""


@dataclass(frozen=True, slots=True)
class CodexParams:
    window: int | None = None
    """The model's context window (None: 100/95 of the window the rollout states, which
    is the 95% Codex lets a request fill; else the model's from genai-prices, else
    272,000 as for gpt-5)."""
    compact_limit: int | None = None
    """Total tokens that trigger a compaction (None: 90% of the window)."""
    user_message_tokens: int = 20_000
    """The user messages kept through a compaction, newest first, at most this many."""
    summary_tokens: int = 2_000
    """Tokens of the summary the model writes (an assumption)."""


USABLE_PERCENT = 95
"""The share of the model's window Codex states and lets a request fill
(effective_context_window_percent)."""


def model_window(sk: Skeleton, params: CodexParams) -> int:
    """The model's window in tokens, as CodexParams.window says."""
    if params.window:
        return params.window
    if sk.context_window:
        return round(sk.context_window * 100 / USABLE_PERCENT)
    return run_window(sk, 272_000)


def compact_limit(sk: Skeleton, params: CodexParams) -> int:
    """The total tokens at which Codex compacts: the params' limit, else 90% of the
    model's window; but a rollout that never compacted and went past that reveals a
    higher one (a limit set in its config.toml): just above its largest total."""
    return limit_and_source(sk, params)[0]


def limit_and_source(sk: Skeleton, params: CodexParams) -> tuple[int, str]:
    """compact_limit and where it comes from, for a person."""
    if params.compact_limit:
        return params.compact_limit, "set"
    window = model_window(sk, params)
    rule = window * 9 // 10
    if params.window or sk.compactions:
        return rule, f"90% of the model's window ({window:,})"
    largest = _largest_total(sk)
    if largest >= rule:
        return (
            largest + 1,
            f"above the rollout's largest total ({largest:,}), which did not compact",
        )
    return rule, f"90% of the model's window ({window:,})"


def _largest_total(sk: Skeleton) -> int:
    """The largest total Codex computed after a measured response of a rollout that
    never compacted: its input and output plus its estimate of the reasoning before the
    newest user turn."""
    reasoning, newest = _reasoning_sums(sk), newest_user_turns(sk)
    return max(
        (u.context + u.output_tokens + reasoning[newest[r]] for r, u in logged_usages(sk).items()),
        default=0,
    )


def _reasoning_sums(sk: Skeleton) -> list[int]:
    """Prefix sums, per message, of Codex's estimate of its encrypted reasoning."""
    opaque = sk.opaque_thinking or (0,) * sk.size
    return prefix_sums([reasoning_estimate(c) if c else 0 for c in opaque])


def reasoning_estimate(chars: int) -> int:
    """Codex's estimate, in tokens, of an encrypted reasoning item `chars` characters
    long (base64): the decoded bytes less 650, 4 bytes a token, rounded up."""
    return math.ceil(max(chars * 3 // 4 - 650, 0) / 4)


class CodexPlanner:
    """After a request whose tokens and output reach the limit, the history becomes the
    leading instructions, the user messages (up to `user_message_tokens`) and a
    summary; the run continues from there. O(1) per request."""

    def __init__(self, ctx: Context, params: CodexParams) -> None:
        sk = self.sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(sk)
        self.head = leading_system(sk)
        self.limit = compact_limit(sk, params)
        self.reasoning = _reasoning_sums(sk)
        self.newest_user = newest_user_turns(sk)
        self.user = prefix_sums(
            [t if u else 0 for t, u in zip(sk.tokens, sk.user_turn, strict=True)]
        )
        self.fixed = MESSAGE_OVERHEAD + ctx.count(CODEX_SUMMARY_PREFIX) + params.summary_tokens
        self.provider = ctx.provider
        self.p = params
        self.boundary = 0
        self.compact_next = False

    def plan(self, end: int) -> Plan:
        if self.compact_next and end > self.head:
            self.boundary, self.compact_next = end, False
        plan = Plan(end)
        if self.boundary:
            users = self.user[self.boundary] - self.user[self.head]
            note = self.fixed + min(users, self.p.user_message_tokens)
            plan = Plan(end, self.head, self.boundary, "s", note, stage="summarize")
        sk = self.sk
        start = self.boundary
        earlier = self.reasoning[max(self.newest_user[end], start)] - self.reasoning[start]
        logged = None if self.boundary else logged_usage(sk, end)
        total = None if logged is None else logged.context + logged.output_tokens
        if total is None:
            output = sk.tokens[end] if end < sk.size and sk.roles[end] == "assistant" else 0
            total = self.provider(self.acct.sent(plan)) + output
        if total + earlier >= self.limit:
            self.compact_next = True
        return plan


class CodexPolicy:
    """Codex CLI's auto-compaction: once a response's total tokens (its measured input
    and output, where the log measured them, plus Codex's estimate of the encrypted
    reasoning before the newest user turn) reach 90% of the model's window, the
    history is replaced by the initial instructions, the user's messages (newest
    first, up to 20,000 tokens) and a summary, as one user message.

    Source: openai/codex, codex-rs/core (compact.rs: COMPACT_USER_MESSAGE_MAX_TOKENS
    20,000, the summary prefix; auto-compact limit window * 9 / 10; gpt-5 context
    window 272,000). Stateful. Here the kept user messages are counted inside the
    inserted summary (they are sent, but no longer where they were)."""

    name = "codex_auto_compact"
    label = "codex_auto_compact: compact at 90% of the window (Codex CLI)"
    source = "openai/codex codex-rs/core compact.rs"
    Params = CodexParams

    def setup(self, ctx: Context, params: CodexParams) -> CodexPlanner:
        return CodexPlanner(ctx, params)

    def trigger(self, sk: Skeleton, params: CodexParams) -> tuple[int, str]:
        """(tokens at which it compacts, where that figure comes from)."""
        return limit_and_source(sk, params)

    def replacements(self, params: CodexParams) -> dict[str, str]:
        return {"s": f"{CODEX_SUMMARY_PREFIX} … [the user's messages and the summary]"}
