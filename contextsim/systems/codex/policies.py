"""Codex CLI's context policy: auto-compaction past `model_auto_compact_token_limit`
(90% of the window by default), stateful.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.counting.skeleton import prefix_sums
from contextsim.engine.condensing import run_window
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
    """The model's context window (None: the rollout's model_context_window, else the
    model's from genai-prices, else 272,000 as for gpt-5)."""
    compact_limit: int | None = None
    """Total tokens that trigger a compaction (None: 90% of the window)."""
    user_message_tokens: int = 20_000
    """The user messages kept through a compaction, newest first, at most this many."""
    summary_tokens: int = 2_000
    """Tokens of the summary the model writes (an assumption)."""


class CodexPlanner:
    """After a request whose tokens and output reach the limit, the history becomes the
    leading instructions, the user messages (up to `user_message_tokens`) and a
    summary; the run continues from there. O(1) per request."""

    def __init__(self, ctx: Context, params: CodexParams) -> None:
        sk = self.sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(sk)
        self.head = leading_system(sk)
        window = params.window or run_window(sk, 272_000)
        self.limit = params.compact_limit or window * 9 // 10
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
        output = sk.tokens[end] if end < sk.size and sk.roles[end] == "assistant" else 0
        if self.provider(self.acct.sent(plan)) + output >= self.limit:
            self.compact_next = True
        return plan


class CodexPolicy:
    """Codex CLI's auto-compaction: once a response's total tokens reach 90% of the
    window, the history is replaced by the initial instructions, the user's messages
    (newest first, up to 20,000 tokens) and a summary, as one user message.

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

    def replacements(self, params: CodexParams) -> dict[str, str]:
        return {"s": f"{CODEX_SUMMARY_PREFIX} … [the user's messages and the summary]"}
