"""Policies that condense the history once it grows past a limit and carry that from
step to step (stateful): OpenHands' amortized forgetting and LLM summarizing
condensers, Codex CLI's auto-compaction and Claude Code's auto-compact.

Each keeps a head, drops or summarizes messages [head, boundary), and sends messages
[boundary, end); the boundary only moves forward, when the limit is crossed again.
Units: tokens under the run's estimator unless said; indexes are messages. The size
of a summary the model would write is a parameter (no log says it in advance).
"""

from __future__ import annotations

from dataclasses import dataclass

from contextsim.estimators import MESSAGE_OVERHEAD
from contextsim.policies.base import Context, Plan, plain_accounts
from contextsim.policies.cuts import leading_system
from contextsim.prices import model_facts
from contextsim.skeleton import KIND_INDEX, Skeleton, prefix_sums

RESULT = KIND_INDEX["tool_result"]
CODEX_SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process."
)
"""The opening of the user message Codex puts before the summary (abridged)."""
SUMMARY_NOTE = "[One message summarizing the earlier conversation.]"
FORGOTTEN_NOTE = "[Earlier events were forgotten: nothing stands in their place.]"


def past_results(sk: Skeleton, i: int, end: int) -> int:
    """The first message at or after i that is not a tool result (at most `end`): a
    kept part starting there holds no result whose call was dropped."""
    while i < end and sk.kinds[i] == RESULT:
        i += 1
    return i


def check_window(max_size: int, keep_first: int) -> None:
    """Raise ValueError unless the halved view has room for the head and a tail."""
    if max_size < 4 or not 0 <= keep_first < max_size // 2 - 1:
        raise ValueError("max_size must be at least 4 and keep_first below max_size / 2 - 1")


@dataclass(frozen=True, slots=True)
class ForgettingParams:
    max_size: int = 100
    """Events (messages) the view may hold; one more and half of them are forgotten."""
    keep_first: int = 1
    """Events at the start that are always kept."""

    def __post_init__(self) -> None:
        check_window(self.max_size, self.keep_first)


@dataclass(frozen=True, slots=True)
class SummarizingParams:
    max_size: int = 100
    keep_first: int = 1
    summary_tokens: int = 1_000
    """Tokens of the summary the condenser's model writes (an assumption)."""

    def __post_init__(self) -> None:
        check_window(self.max_size, self.keep_first)


class EventWindowPlanner:
    """OpenHands' rolling condensers. The view is the head, the summary (when there is
    one) and the events since the boundary; over `max_size` events, the boundary moves
    so the view is back to half of it. O(1) per request."""

    def __init__(self, ctx: Context, params: ForgettingParams | SummarizingParams) -> None:
        self.sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(self.sk)
        self.head = params.keep_first
        self.max_size = params.max_size
        summarizing = isinstance(params, SummarizingParams)
        self.kind = "s" if summarizing else "t"
        self.stage = "summarize" if summarizing else "trim"
        self.note = (
            MESSAGE_OVERHEAD + params.summary_tokens if isinstance(params, SummarizingParams) else 0
        )
        self.extra_events = 1 if summarizing else 0  # the summary is an event of the view
        self.boundary = 0

    def plan(self, end: int) -> Plan:
        size = self.head + self.extra_events + end - self.boundary if self.boundary else end
        if size > self.max_size:
            tail = self.max_size // 2 - self.head - self.extra_events
            cut = past_results(self.sk, max(end - tail, self.head), end)
            if cut > max(self.boundary, self.head):
                self.boundary = cut
        if not self.boundary:
            return Plan(end)
        return Plan(end, self.head, self.boundary, self.kind, self.note, stage=self.stage)


class ForgettingPolicy:
    """OpenHands' `AmortizedForgettingCondenser`: past `max_size` events, forget the
    middle, keeping the first `keep_first` and the newest, so the view halves.

    Source: OpenHands, openhands/memory/condenser/impl/amortized_forgetting_condenser.py,
    config defaults max_size 100 and keep_first 1 (core/config/condenser_config.py).
    Stateful: a condensation is recorded and every later view starts after it. Events
    are counted as messages; the kept part never starts with a result whose call was
    forgotten (OpenHands drops such orphans)."""

    name = "openhands_amortized_forgetting"
    label = "openhands_amortized_forgetting: forget half past 100 events (OpenHands)"
    source = "OpenHands AmortizedForgettingCondenser"
    Params = ForgettingParams

    def setup(self, ctx: Context, params: ForgettingParams) -> EventWindowPlanner:
        return EventWindowPlanner(ctx, params)

    def replacements(self, params: ForgettingParams) -> dict[str, str]:
        return {"t": FORGOTTEN_NOTE}


class SummarizingPolicy:
    """OpenHands' `LLMSummarizingCondenser`: past `max_size` events, summarize the
    middle into one event after the first `keep_first`, keeping the newest, so the view
    holds half of `max_size`; each summary takes in the one before.

    Source: OpenHands, openhands/memory/condenser/impl/llm_summarizing_condenser.py
    (max_size 100, keep_first 1). Stateful. The summary's size is `summary_tokens`."""

    name = "openhands_llm_summarizing"
    label = "openhands_llm_summarizing: summarize half past 100 events (OpenHands)"
    source = "OpenHands LLMSummarizingCondenser"
    Params = SummarizingParams

    def setup(self, ctx: Context, params: SummarizingParams) -> EventWindowPlanner:
        return EventWindowPlanner(ctx, params)

    def replacements(self, params: SummarizingParams) -> dict[str, str]:
        return {"s": SUMMARY_NOTE}


def run_window(sk: Skeleton, fallback: int) -> int:
    """The run's context window in tokens: what the log states (Codex's
    model_context_window), else the model's from genai-prices, else `fallback`."""
    if sk.context_window:
        return sk.context_window
    facts = model_facts(sk.model)
    return facts.context_window if facts and facts.context_window else fallback


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


@dataclass(frozen=True, slots=True)
class ClaudeCodeParams:
    window: int | None = None
    """The model's window (None: the model's from genai-prices, else 200,000)."""
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


class ClaudeCodePlanner:
    """Before a request at or over the threshold, everything but the system prompt and
    the newest exchange (the user's message, or the last call and its results) becomes
    one summary. O(1) per request."""

    def __init__(self, ctx: Context, params: ClaudeCodeParams) -> None:
        sk = self.sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(sk)
        self.head = leading_system(sk)
        window = params.window or run_window(sk, 200_000)
        capped = params.capped_output
        if capped is None:
            capped = not _before(sk.harness_version, (2, 1))
        reserve = min(params.max_output, 20_000) if capped else params.max_output
        self.threshold = window - reserve - params.buffer
        self.note = MESSAGE_OVERHEAD + params.summary_tokens
        self.provider = ctx.provider
        self.boundary = 0

    def _plan(self, end: int) -> Plan:
        if not self.boundary:
            return Plan(end)
        return Plan(end, self.head, self.boundary, "s", self.note, stage="summarize")

    def plan(self, end: int) -> Plan:
        plan = self._plan(end)
        if self.provider(self.acct.sent(plan)) >= self.threshold and end > 0:
            last = end - 1
            call = self.sk.answers[last] if self.sk.kinds[last] == RESULT else -1
            cut = call if call >= 0 else last
            if cut > max(self.boundary, self.head):
                self.boundary = cut
                plan = self._plan(end)
        return plan


def _before(version: str, than: tuple[int, int]) -> bool:
    """Whether a version such as "2.0.76" is older than `than` (False when unreadable)."""
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) < than


class ClaudeCodePolicy:
    """Claude Code's auto-compact: at window - 33,000 tokens (by default), the
    conversation is replaced by a summary, sent as a user message after the system
    prompt, and goes on from there.

    Source: Claude Code is closed source; the threshold (effective window = window -
    min(max output, 20,000), less a 13,000-token buffer) is from public analyses
    (anthropics/claude-code issue 31806). Versions before 2.1 reserved the whole max
    output (32,000): real 2.0.x sessions compact at about 155k, 2.1.x at about 167k.
    It decides on the provider's count (the reconciled size). Not modelled: the files
    it reads back in after compacting (up to 50,000 tokens), CLAUDE.md, microcompaction
    of old tool results (claude_code_microcompact)."""

    name = "claude_code_auto_compact"
    label = "claude_code_auto_compact: summarize at window - 33k (Claude Code)"
    source = "Claude Code auto-compact (public analyses)"
    Params = ClaudeCodeParams

    def setup(self, ctx: Context, params: ClaudeCodeParams) -> ClaudeCodePlanner:
        return ClaudeCodePlanner(ctx, params)

    def replacements(self, params: ClaudeCodeParams) -> dict[str, str]:
        return {"s": SUMMARY_NOTE}
