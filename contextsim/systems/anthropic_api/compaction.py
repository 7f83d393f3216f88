"""Anthropic's server-side compaction (`compact_20260112`): once a request's input
exceeds a trigger, the API summarizes the conversation into a `compaction` block at the
start of its response, and every later request is read from that block on.

Source: Anthropic documentation, "Compaction" (build-with-claude/compaction), beta
header `compact-2026-01-12`; parameter names and types from the anthropic SDK 2.15.0,
anthropic/types/beta/beta_compact_20260112_edit_param.py. Facts used:
- the trigger (`{"type": "input_tokens", "value": N}`, default 150,000, at least
  50,000) is compared, before the request is answered, with its whole input (system
  prompt, tool definitions and messages): the provider's count;
- when it is exceeded the API writes a summary of the conversation (an extra sampling
  pass over the whole request), replaces everything before the compaction block with it,
  and answers from the compacted context (the usage's top-level input tokens are that
  answer's, the summary pass is in `usage.iterations`);
- later requests carry the response, compaction block included: the API drops every
  message block before the newest compaction block; the system prompt and tool
  definitions are kept verbatim, never summarized;
- `instructions` replaces the summarization prompt; `pause_after_compaction` returns the
  compaction block alone (stop reason "compaction"), so the client can send again the
  compaction block followed by messages it keeps verbatim (the documentation's pattern
  keeps the newest 3), and the model answers from those.

Units: tokens (the trigger on the reconciled count, as the provider counts); messages
for `preserve_messages`. The summary's size is a parameter (no log says it in advance).
"""

from __future__ import annotations

from dataclasses import dataclass

from contextsim.counting.skeleton import KIND_INDEX
from contextsim.engine.cuts import leading_system
from contextsim.engine.policy import Context, Plan, plain_accounts

RESULT = KIND_INDEX["tool_result"]
MIN_TRIGGER = 50_000
"""The smallest trigger the API accepts (input tokens)."""
COMPACTION_NOTE = "[compaction block: the summary of everything before it]"


@dataclass(frozen=True, slots=True)
class AnthropicCompactionParams:
    trigger: int = 150_000
    """Input tokens (system prompt, tools and messages, as the provider counts them)
    over which the request is compacted; at least 50,000."""
    instructions: str = ""
    """The summarization prompt, replacing the API's default ('' for the default). Not
    simulated: what it changes is the summary, whose size is `summary_tokens`."""
    pause_after_compaction: bool = False
    """Return the compaction block alone, for the client to continue with the block and
    the messages it keeps (`preserve_messages`)."""
    preserve_messages: int = 0
    """With pause_after_compaction: the newest messages of the compacted request the
    client sends again after the compaction block (moved back to a tool call when the
    first would be its result); 0 without a pause."""
    summary_tokens: int = 3_500
    """Tokens of the summary in the compaction block (an assumption; the
    documentation's usage example shows a 3,500-token summary of 180,000 tokens)."""

    def __post_init__(self) -> None:
        if self.trigger < MIN_TRIGGER:
            raise ValueError(
                f"trigger must be at least {MIN_TRIGGER:,} input tokens (the API's minimum)"
            )
        if self.preserve_messages and not self.pause_after_compaction:
            raise ValueError("preserve_messages needs pause_after_compaction")


class AnthropicCompactionPlanner:
    """Before a request whose input, as sent, exceeds the trigger, everything after
    the leading system messages up to the compaction point becomes one summary; later
    requests send the summary and what follows it. O(1) per request."""

    def __init__(self, ctx: Context, params: AnthropicCompactionParams) -> None:
        sk = self.sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(sk)
        self.head = leading_system(sk)
        self.params = params
        self.provider = ctx.provider
        self.hard_limit = ctx.hard_limit
        self.boundary = 0

    def _plan(self, end: int) -> Plan:
        if not self.boundary:
            return Plan(end)
        note = self.params.summary_tokens
        return Plan(end, self.head, self.boundary, "s", note, stage="summarize")

    def _cut(self, end: int) -> int:
        """Where the compacted part of request [0, end) ends: at `end`, or before the
        newest `preserve_messages`, never between a tool call and its results."""
        cut = max(end - self.params.preserve_messages, self.head)
        if cut < end and self.sk.kinds[cut] == RESULT:
            call = self.sk.answers[cut]
            if call >= self.head:
                return call
            while cut < end and self.sk.kinds[cut] == RESULT:
                cut += 1
        return cut

    def plan(self, end: int) -> Plan:
        plan = self._plan(end)
        size = self.provider(self.acct.sent(plan))
        # A request over the hard limit is refused whole: the summary pass reads it all.
        if self.params.trigger < size <= self.hard_limit and end > self.head:
            cut = self._cut(end)
            if cut > max(self.boundary, self.head):
                self.boundary = cut
                plan = self._plan(end)
        return plan


class AnthropicCompactionPolicy:
    """Anthropic API server-side compaction, strategy `compact_20260112`: over
    `trigger` input tokens (150,000; at least 50,000) the API summarizes the
    conversation into a compaction block and answers from it; later requests start from
    the newest compaction block (the system prompt and tools kept).

    Source: Anthropic documentation, "Compaction" (build-with-claude/compaction; beta
    header compact-2026-01-12). Stateful: it decides on the provider's count (the
    reconciled size) of the request as it would be sent, earlier compactions applied.
    The compacting request's record is the answer's context (the summary, and the
    messages preserved after a pause); not counted: the summary pass itself (its input
    is the whole request at the trigger, its output the summary), billed in the API's
    usage.iterations, nor the extra call a pause makes. The summary's size is
    `summary_tokens`; `instructions` is exported, not simulated. Compactions of server
    tool loops inside one request are not modelled.
    """

    name = "anthropic_compaction"
    label = "anthropic_compaction: API server-side compaction at 150k (compact_20260112)"
    source = "Anthropic API docs, compaction, compact_20260112"
    Params = AnthropicCompactionParams

    def setup(self, ctx: Context, params: AnthropicCompactionParams) -> AnthropicCompactionPlanner:
        return AnthropicCompactionPlanner(ctx, params)

    def replacements(self, params: AnthropicCompactionParams) -> dict[str, str]:
        return {"s": COMPACTION_NOTE}
