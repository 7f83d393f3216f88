"""Letta's summarizers: the message-count partial eviction of its older agent loop
(`letta_summarizer`, with the static message buffer as its other mode) and the
token-based sliding window its current loop compacts with (`letta_sliding_window`).

Both keep Letta's system message (index 0 of the agent's in-context messages), replace
a prefix of the conversation by one summary message placed right after it (recursive:
the old summary is summarized again with the rest) and keep the newest messages from an
assistant message on, so a call is never separated from its results.

Source: letta 0.16.8 on PyPI, the last release of the Letta server under that name (from
0.32 the name belongs to Letta Code, a terminal client without these modules):
`letta/settings.py` (SummarizerSettings: mode partial_evict_message_buffer_mode,
message_buffer_limit 60, message_buffer_min 15, partial_evict_summarizer_percentage
0.30, env prefix LETTA_SUMMARIZER_), `letta/services/summarizer/summarizer.py`
(Summarizer), `letta/agents/letta_agent.py` (`_rebuild_context_window`),
`letta/services/summarizer/summarizer_config.py` (CompactionSettings: mode
sliding_window, sliding_window_percentage defaulting to the 0.30 above, clip_chars
50,000), `summarizer_sliding_window.py`, `compact.py`, `thresholds.py`,
`letta/constants.py` (SUMMARIZATION_TRIGGER_MULTIPLIER 0.9, DEFAULT_CONTEXT_WINDOW
128,000) and `letta/agents/letta_agent_v3.py`.

Units: Letta counts messages for the eviction point (one of ours is one of Letta's;
Letta stores each tool return as its own message) and tokens for the triggers, which
read the provider's usage (here the reconciled size). The summary's size is a parameter.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.condensing import SUMMARY_NOTE, run_window
from contextsim.engine.policy import Context, Plan, plain_accounts

MODES = ("partial_evict", "static_buffer")
DEFAULT_WINDOW = 128_000
"""Letta's DEFAULT_CONTEXT_WINDOW, for a model genai-prices does not know."""
TRIGGER_MULTIPLIER = 0.9
"""letta.constants.SUMMARIZATION_TRIGGER_MULTIPLIER: the sliding window compacts once a
step's total tokens exceed this share of the window (not configurable in Letta)."""
EVICTED_NOTE = "[Earlier messages were evicted from the context window.]"


def _output(sk: Skeleton, end: int) -> int:
    """Tokens of the response to the request ending at `end` (0 when there is none)."""
    return sk.tokens[end] if end < sk.size and sk.roles[end] == "assistant" else 0


@dataclass(frozen=True, slots=True)
class LettaSummarizerParams:
    mode: str = "partial_evict"
    """"partial_evict" (Letta's default) or "static_buffer"."""
    message_buffer_limit: int = 60
    """static_buffer: more in-context messages than this after a request evicts."""
    message_buffer_min: int = 15
    """static_buffer: the newest messages it keeps (from a user message on)."""
    partial_evict_summarizer_percentage: float = 0.30
    """partial_evict: the share of the in-context messages summarized (by count)."""
    window: int | None = None
    """The model's context window (None: the model's from genai-prices, else 128,000)."""
    summary_tokens: int = 1_000
    """Tokens of the summary message (an assumption)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode: expected one of {', '.join(MODES)}, got {self.mode!r}")
        if not 0.0 <= self.partial_evict_summarizer_percentage <= 1.0:
            raise ValueError("partial_evict_summarizer_percentage must be between 0 and 1")
        if self.message_buffer_limit < 1:
            raise ValueError("message_buffer_limit must be at least 1")


class _LettaBase:
    """What both planners share: Letta's in-context list is [system] + [summary, if
    any] + messages [start, e) of the history; the system message is the run's first
    when it is a system message, else one the log left out (index 0 of the list)."""

    def __init__(self, ctx: Context, summary_tokens: int, window: int | None) -> None:
        sk = self.sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(sk)
        self.head = 1 if sk.size and sk.roles[0] == "system" else 0
        self.assistants = [i for i, r in enumerate(sk.roles) if r == "assistant"]
        self.window = window or run_window(sk, DEFAULT_WINDOW)
        self.note = MESSAGE_OVERHEAD + summary_tokens
        self.provider = ctx.provider
        self.boundary = 0
        self.kind = "s"
        self.stage = "summarize"

    @property
    def start(self) -> int:
        return self.boundary if self.boundary else self.head

    @property
    def summarized(self) -> int:
        return 1 if self.boundary and self.kind == "s" else 0

    def to_list(self, i: int) -> int:
        """Index in Letta's in-context list of history message i (>= start)."""
        return i - self.start + 1 + self.summarized

    def to_history(self, t: int) -> int:
        """History index of the list's element t (t past the system and summary)."""
        return self.start + t - 1 - self.summarized

    def first_assistant_from(self, i: int, e: int) -> int | None:
        j = bisect.bisect_left(self.assistants, i)
        if j < len(self.assistants) and self.assistants[j] < e:
            return self.assistants[j]
        return None

    def last_assistant_upto(self, i: int) -> int | None:
        """The newest assistant message at index <= i and >= start."""
        j = bisect.bisect_right(self.assistants, i) - 1
        if j >= 0 and self.assistants[j] >= self.start:
            return self.assistants[j]
        return None

    def current(self, end: int) -> Plan:
        if not self.boundary:
            return Plan(end)
        note = self.note if self.kind == "s" else 0
        return Plan(end, self.head, self.boundary, self.kind, note, stage=self.stage)


class LettaSummarizerPlanner(_LettaBase):
    """Letta's older loop (LettaAgent): after each invocation (a user message and the
    steps answering it), when the tokens of its steps add up past the window, evict;
    static_buffer also evicts when the list holds more than message_buffer_limit."""

    def __init__(self, ctx: Context, params: LettaSummarizerParams) -> None:
        super().__init__(ctx, params.summary_tokens, params.window)
        self.p = params
        if params.mode == "static_buffer":
            self.kind, self.stage = "t", "trim"
        sk = self.sk
        self.turns = [i for i, t in enumerate(sk.user_turn) if t]
        first = self.turns[0] if self.turns else sk.size
        self.next_turn = bisect.bisect_right(self.turns, first)
        self.spent = 0  # provider tokens of the current invocation's steps, summed

    def plan(self, end: int) -> Plan:
        while self.next_turn < len(self.turns) and self.turns[self.next_turn] < end:
            # The invocation before this user message is over: Letta rebuilds its context.
            self._rebuild(self.turns[self.next_turn])
            self.next_turn += 1
            self.spent = 0
        plan = self.current(end)
        self.spent += self.provider(self.acct.sent(plan)) + _output(self.sk, end)
        return plan

    def _rebuild(self, e: int) -> None:
        over = self.spent > self.window
        n = 1 + self.summarized + e - self.start  # the in-context list's length
        if self.p.mode == "partial_evict":
            if over:
                self._partial_evict(n, e)
            return
        if over:
            self._evict_from(n, n, e)  # forced with clear: nothing retained
        elif n > self.p.message_buffer_limit:
            self._evict_from(max(1, n - self.p.message_buffer_min), n, e)

    def _partial_evict(self, n: int, e: int) -> None:
        target = round((1.0 - self.p.partial_evict_summarizer_percentage) * n)
        lowest = max(self.to_history(max(target, 1 + self.summarized)), self.start)
        found = self.first_assistant_from(lowest, e)
        if found is None:
            return  # Letta raises: no assistant message to start the kept part at
        self.boundary = found

    def _evict_from(self, target: int, n: int, e: int) -> None:
        """static_buffer: keep from the first user message at list index >= target."""
        i = max(self.to_history(target), self.start)
        while i < e and not self.sk.user_turn[i]:
            i += 1
        if i > self.start:
            self.boundary = i


class LettaSummarizerPolicy:
    """Letta's Summarizer (its older agent loop), counted in messages. partial_evict
    (the default): after an invocation whose steps' total tokens add up past the
    window, the oldest 30% of the in-context messages (round(0.7 x n) on, moved forward
    to the next assistant message) become one summary after the system message.
    static_buffer: past message_buffer_limit (60) messages, only the newest
    message_buffer_min (15), from a user message on, stay; nothing replaces the rest.

    Source: letta 0.16.8, letta/settings.py (SummarizerSettings), letta/services/
    summarizer/summarizer.py (Summarizer) and letta/agents/letta_agent.py
    (_rebuild_context_window, run after each invocation with the invocation's summed
    usage.total_tokens). message_buffer_limit and message_buffer_min apply to
    static_buffer only; partial_evict ignores them. Approximate: a step's total tokens
    are the reconciled request plus the response's estimated tokens."""

    name = "letta_summarizer"
    label = "letta_summarizer: evict 30% of the messages past the window (Letta)"
    source = "letta 0.16.8 services/summarizer/summarizer.py, settings.SummarizerSettings"
    Params = LettaSummarizerParams

    def setup(self, ctx: Context, params: LettaSummarizerParams) -> LettaSummarizerPlanner:
        return LettaSummarizerPlanner(ctx, params)

    def replacements(self, params: LettaSummarizerParams) -> dict[str, str]:
        if params.mode == "static_buffer":
            return {"t": EVICTED_NOTE}
        return {"s": SUMMARY_NOTE}


@dataclass(frozen=True, slots=True)
class LettaSlidingParams:
    sliding_window_percentage: float = 0.30
    """Eviction starts at this share of the messages plus 10% and grows by 10% until
    the system message and the kept messages come under (1 - it) x the window."""
    window: int | None = None
    """The model's context window (None: the model's from genai-prices, else 128,000)."""
    summary_tokens: int = 1_000
    """Tokens of the summary message (an assumption; Letta clips it at 50,000
    characters)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.sliding_window_percentage <= 1.0:
            raise ValueError("sliding_window_percentage must be between 0 and 1")


class LettaSlidingPlanner(_LettaBase):
    """Letta's current loop (LettaAgentV3): after a step whose total tokens exceed 90%
    of the window, compact before the next step. O(log M) per request."""

    def __init__(self, ctx: Context, params: LettaSlidingParams) -> None:
        super().__init__(ctx, params.summary_tokens, params.window)
        self.p = params
        self.threshold = int(self.window * TRIGGER_MULTIPLIER)
        self.compact_after = -1  # the end of the request whose step crossed the threshold

    def plan(self, end: int) -> Plan:
        if self.compact_after >= 0:
            # Letta compacts at the end of the step, before a new user message arrives.
            e = end
            while e > self.compact_after + 1 and self.sk.user_turn[e - 1]:
                e -= 1
            self._compact(e)
            self.compact_after = -1
        plan = self.current(end)
        if self.provider(self.acct.sent(plan)) + _output(self.sk, end) > self.threshold:
            self.compact_after = end
        return plan

    def _kept(self, first: int, e: int) -> int:
        """The reconciled tokens of [system] + messages [first, e)."""
        return self.provider(self.acct.span(0, self.head, 0) + self.acct.span(first, e, 0))

    def _compact(self, e: int) -> None:
        if e <= self.start:
            return
        n = 1 + self.summarized + e - self.start
        goal = (1 - self.p.sliding_window_percentage) * self.window
        tokens = float(self.window)
        share = self.p.sliding_window_percentage
        found: int | None = None
        # The same float steps as Letta's loop (0.3 + 0.1 + ... may end just under 1.0).
        while tokens >= goal and share < 1.0:
            share += 0.10
            cut = round(share * n)
            a = self.last_assistant_upto(self.to_history(min(cut, n - 1)))
            if a is None:
                continue
            found = a
            tokens = self._kept(a, e)
        if found is None or share >= 1.0 or self.to_list(found) >= n - 1:
            self.boundary = e  # Letta falls back to summarizing everything ("all")
            self.kind = "s"
            return
        self.boundary, self.kind = found, "s"
        # Letta's estimate after compacting (compact.py counts [system] + the kept
        # messages, before the summary message is inserted): the reconciled size.
        if self._kept(found, e) >= self.threshold:
            self.boundary = e  # still over: summarized again, everything ("all")


class LettaSlidingPolicy:
    """Letta's sliding-window compaction (CompactionSettings mode "sliding_window", the
    default of its current agent loop): once a step's total tokens exceed 90% of the
    window, summarize the oldest messages into one summary after the system message,
    evicting 40%, 50%, ... of the in-context messages (back to an assistant message)
    until the system message and the rest fit in 70% of the window; when nothing fits,
    or the result is still over the threshold, everything is summarized ("all").

    Source: letta 0.16.8, letta/services/summarizer/summarizer_sliding_window.py
    (summarize_via_sliding_window), compact.py (compact_messages and its fallbacks),
    summarizer_config.py (CompactionSettings), thresholds.py and constants.py
    (SUMMARIZATION_TRIGGER_MULTIPLIER 0.9), agents/letta_agent_v3.py. Letta counts the
    kept messages with the model's tokenizer (x 1.3 when it has to approximate); here
    with the reconciled size. Not modelled: the self_compact modes, approval requests."""

    name = "letta_sliding_window"
    label = "letta_sliding_window: summarize the oldest messages at 90% of the window (Letta)"
    source = "letta 0.16.8 services/summarizer/summarizer_sliding_window.py"
    Params = LettaSlidingParams

    def setup(self, ctx: Context, params: LettaSlidingParams) -> LettaSlidingPlanner:
        return LettaSlidingPlanner(ctx, params)

    def replacements(self, params: LettaSlidingParams) -> dict[str, str]:
        return {"s": SUMMARY_NOTE}
