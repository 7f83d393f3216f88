"""OpenAI's context policies: the Responses API's own context management
(`truncation: "auto"` and server-side compaction, `context_management: [{"type":
"compaction", ...}]`) and the OpenAI Agents SDK's tool-output trimmer.

Both run on OpenAI's servers, on the whole conversation the client sends (or chains with
`previous_response_id`), so both decide on the provider's count: the reconciled size
(Context.provider), compared with the run's hard limit (the model's window) or with the
compaction threshold. The `instructions` of a Responses request are not input items:
the run's leading system messages stand for them and are always kept.

The trimmer runs in the client before each request: it shortens old tool outputs in
place and is decided afresh for every request (stateless).

Units: tokens (the provider's count for decisions, the estimator's for the accounting);
indexes are messages, each standing for one input item.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.engine.accounting import Accountant
from contextsim.engine.cuts import Cuts, leading_system, violations
from contextsim.engine.policy import Context, Plan, Statics, plain_accounts

COMPACTION_NOTE = "[compaction item: the earlier conversation, encrypted (opaque)]"
"""What stands for the compaction item when a request is shown: its real content is
encrypted and not meant to be read."""


def largest_within(provider: Callable[[int], int], limit: int, most: int) -> int:
    """The largest estimated size e in [0, most] whose provider count is at most
    `limit` (-1 when even an empty request is over it). `provider` never decreases
    (scale x estimated + overhead), so a binary search finds it: O(log most)."""
    if provider(0) > limit:
        return -1
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if provider(mid) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True, slots=True)
class TruncationParams:
    reserved_output: int = 0
    """Tokens kept free for the answer below the window: the documentation says that on
    some models truncation begins earlier because the API subtracts the model's maximum
    output from its input limit (0: the whole window is input)."""


class TruncationPlanner:
    """Per request: over the limit, drop the oldest items after the instructions, the
    fewest that make the request fit, never separating a call from its output.
    Stateless; O(log M) per request."""

    def __init__(self, ctx: Context, params: TruncationParams) -> None:
        sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(sk)
        self.head = leading_system(sk)
        candidates = list(range(self.head + 1, sk.size))
        self.cuts = Cuts(self.acct, candidates, violations(sk, candidates))
        limit = max(ctx.hard_limit - params.reserved_output, 0)
        # The largest request (estimator's tokens) the provider counts within the limit.
        self.fits = largest_within(ctx.provider, limit, self.acct.raw[-1])
        self.head_tokens = self.acct.raw[self.head]

    def plan(self, end: int) -> Plan:
        if self.acct.raw[end] <= self.fits or end <= self.head + 1:
            return Plan(end)
        room = self.fits - self.head_tokens
        cut = self.cuts.fitting(end, 0, room) if room >= 0 else None
        if cut is None:  # not even the newest item fits: the API cannot help
            cut = self.cuts.newest(end)
        if cut is None or cut <= self.head:
            return Plan(end)
        return Plan(end, self.head, cut, "t", 0, stage="trim")


class TruncationPolicy:
    """The Responses API's `truncation: "auto"`: when the input exceeds the model's
    context window, items are dropped from the beginning of the conversation until it
    fits (the default, "disabled", fails the request with a 400 error instead).

    Source: OpenAI API reference, Responses create, `truncation` (as in the openai
    Python SDK 3.57.0, openai/types/responses/response_create_params.py). The window is
    the run's hard limit, compared with the provider's count (the reconciled size);
    `reserved_output` lowers it, as the reference says happens on some models.
    Stateless: each request is truncated afresh from the full conversation.
    Not documented, and read here in the simplest way: the instructions (the run's
    leading system messages) are kept, being no input item; whole items are dropped,
    oldest first, the first user message included; a function call and its output go
    together (assumed: the API rejects a function call output whose call is missing);
    nothing stands in place of what was dropped. When not even the newest item fits,
    the request is sent cut to it and is rejected over the hard limit."""

    name = "openai_truncation_auto"
    label = 'openai_truncation_auto: drop the oldest items over the window (Responses "auto")'
    source = "OpenAI Responses API, truncation auto"
    Params = TruncationParams

    def setup(self, ctx: Context, params: TruncationParams) -> TruncationPlanner:
        return TruncationPlanner(ctx, params)

    def replacements(self, params: TruncationParams) -> dict[str, str]:
        return {}


@dataclass(frozen=True, slots=True)
class CompactionParams:
    compact_threshold: int = 200_000
    """Input tokens past which the server compacts. The API documents no default (the
    field is optional); 200,000 is the example value of OpenAI's Agents SDK
    (openai-agents 0.24.0, agents/model_settings.py, ModelSettings.context_management)."""
    compacted_tokens: int = 2_000
    """Tokens of the opaque compaction item the server returns (an assumption: the
    documentation says only that it uses fewer tokens)."""

    def __post_init__(self) -> None:
        if self.compact_threshold < 1:
            raise ValueError("compact_threshold must be at least 1")


class CompactionPlanner:
    """A request whose input, as the provider counts it, exceeds the threshold is
    compacted: everything after the instructions, the previous compaction item
    included, becomes one item of `compacted_tokens`, and the model answers from it;
    later requests send the instructions, that item and what came after it.
    O(1) per request."""

    def __init__(self, ctx: Context, params: CompactionParams) -> None:
        sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(sk)
        self.head = leading_system(sk)
        self.threshold = params.compact_threshold
        self.note = params.compacted_tokens
        self.provider = ctx.provider
        self.boundary = 0

    def _plan(self, end: int) -> Plan:
        if not self.boundary:
            return Plan(end)
        return Plan(end, self.head, self.boundary, "s", self.note, stage="summarize")

    def plan(self, end: int) -> Plan:
        plan = self._plan(end)
        if end > self.head and self.provider(self.acct.sent(plan)) > self.threshold:
            self.boundary = end
            plan = self._plan(end)
        return plan


class CompactionPolicy:
    """The Responses API's server-side compaction (`context_management: [{"type":
    "compaction", "compact_threshold": N}]`): when the rendered input crosses N tokens
    the server compacts the conversation into one encrypted, opaque `compaction` item,
    returned in the response's output, and goes on from it.

    Source: OpenAI API documentation, guides "Compaction" / "Context management"
    (server-side compaction: the trigger on the rendered token count, the compaction
    item emitted in the same response before inference continues on the reduced
    context, items before the latest compaction item no longer needed), and the openai
    Python SDK 3.57.0 (response_create_params.ContextManagement: `type`,
    `compact_threshold`). Decides on the provider's count (the reconciled size).
    Stateful: the item stands for everything before it from then on.
    Not documented, and read here in the simplest way: "crosses" as exceeds; the
    whole input of that request (after the instructions) goes into the item, the
    latest user message too (the standalone /responses/compact endpoint keeps user
    messages; server-side compaction is not said to); the item's size is
    `compacted_tokens`, the same every time; the compaction's own model call is not
    counted."""

    name = "openai_compaction"
    label = "openai_compaction: server-side compaction past 200k (Responses API)"
    source = "OpenAI Responses API, context_management compaction"
    Params = CompactionParams

    def setup(self, ctx: Context, params: CompactionParams) -> CompactionPlanner:
        return CompactionPlanner(ctx, params)

    def replacements(self, params: CompactionParams) -> dict[str, str]:
        return {"s": COMPACTION_NOTE}


TRIMMED = "[Trimmed: {tool} output — {chars} chars → {preview} char preview]\n{head}..."


@dataclass(frozen=True, slots=True)
class TrimmerParams:
    recent_turns: int = 2
    """Tool output from the newest this many user turns is never trimmed."""
    max_output_chars: int = 500
    """Only output longer than this many characters is trimmed."""
    preview_chars: int = 200
    """Characters of the output kept as a preview."""
    trimmable_tools: tuple[str, ...] = ()
    """Only these tools' output is trimmed (empty: every tool's)."""

    def __post_init__(self) -> None:
        if self.recent_turns < 1:
            raise ValueError("recent_turns must be at least 1")


class TrimmerPlanner:
    """Before the `recent_turns`-th newest user message, trim long tool output to a
    preview. O(log M) per request."""

    def __init__(self, ctx: Context, params: TrimmerParams) -> None:
        sk = ctx.skeleton
        self.turns = [i for i, t in enumerate(sk.user_turn) if t]
        self.recent = params.recent_turns
        clearable = [False] * sk.size
        cleared = [0] * sk.size
        for i, n in enumerate(sk.result_count):
            if n == 0 or sk.chars[i] <= params.max_output_chars:
                continue
            if params.trimmable_tools and not all(
                t in params.trimmable_tools for t in sk.tool_names[i].split(",") if t
            ):
                continue
            rate = (sk.tokens[i] - MESSAGE_OVERHEAD) / max(sk.chars[i], 1)
            note = ctx.count(TRIMMED.format(tool="tool", chars=sk.chars[i], preview=0, head=""))
            cleared[i] = MESSAGE_OVERHEAD + n * (note + round(params.preview_chars * rate))
            clearable[i] = cleared[i] < sk.tokens[i]  # applied only when shorter
        self.statics = Statics(clearable, cleared)
        self.acct = Accountant(sk, self.statics)

    def plan(self, end: int) -> Plan:
        seen = bisect.bisect_left(self.turns, end)
        if seen < self.recent:
            return Plan(end)
        cb = self.turns[seen - self.recent]
        if self.acct.clear_count[cb] == 0:
            return Plan(end)
        return Plan(end, clear_before=cb, stage="clear")


class TrimmerPolicy:
    """The OpenAI Agents SDK's `ToolOutputTrimmer`: tool output older than the newest
    `recent_turns` user turns and longer than `max_output_chars` becomes a one-line
    header and its first `preview_chars` characters.

    Source: openai-agents-python, src/agents/extensions/tool_output_trimmer.py (a
    call_model_input_filter: stateless, the stored history is unchanged). A message
    answering several calls is trimmed as a whole; its size decides."""

    name = "openai_tool_output_trimmer"
    label = "openai_tool_output_trimmer: preview old long tool output (OpenAI Agents SDK)"
    source = "openai-agents-python extensions.ToolOutputTrimmer"
    Params = TrimmerParams

    def setup(self, ctx: Context, params: TrimmerParams) -> TrimmerPlanner:
        return TrimmerPlanner(ctx, params)

    def replacements(self, params: TrimmerParams) -> dict[str, str]:
        head = f"<the first {params.preview_chars} characters>"
        return {
            "c": TRIMMED.format(tool="<tool>", chars="N", preview=params.preview_chars, head=head)
        }
