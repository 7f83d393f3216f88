"""Inspect AI's compaction (`inspect_ai.model.compaction(strategy, prefix, ...)`, used by
its `react()` agent), one policy whose `strategy` parameter picks the class.

The handler keeps the input it last sent and appends new messages to it; before a
request whose tokens exceed `threshold` (a share of the window when at most 1.0, else
tokens) it compacts that input with the strategy, again up to three times while still
over and shrinking:
- "edit" (CompactionEdit): tool results older than the newest `keep_tool_uses` tool
  uses become "(Tool result removed)"; the thinking of all but the newest
  `keep_thinking_turns` assistant messages is removed (None: "all", kept).
- "trim" (CompactionTrim): the system messages and the task (everything up to the
  first user message) stay; of the conversation after it, the newest `preserve` share
  of its messages stays (a leading tool result whose call went is dropped too).
- "summary" (CompactionSummary): the conversation after the task becomes one summary
  (the previous summary included).
- "auto" (CompactionAuto): the provider's native compaction where there is one, else
  "summary"; simulated as "summary".
Edits persist: results cleared, messages trimmed or summarized stay so in later
requests, whose new messages are appended whole until the threshold is crossed again.

Source: inspect-ai 0.3.285, inspect_ai/model/_compaction/ (_compaction.py: compaction,
_perform_compaction, _resolve_threshold, DEFAULT_CONTEXT_WINDOW 128,000; edit.py,
trim.py, summary.py, auto.py, types.py: threshold 0.9) and inspect_ai/model/_trim.py
(trim_messages, partition_messages). Units: Inspect counts one message per tool result
(a message of ours holding several results counts as several), tokens as the provider
counts them (the reconciled size: Inspect starts from the last request's usage).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.counting.skeleton import prefix_sums, thinking_of
from contextsim.engine.accounting import Accountant
from contextsim.engine.clearing import excluded
from contextsim.engine.condensing import SUMMARY_NOTE, past_results, run_window
from contextsim.engine.policy import Context, Plan, Statics

STRATEGIES = ("auto", "summary", "trim", "edit")
TOOL_RESULT_REMOVED = "(Tool result removed)"
"""inspect_ai.model._compaction.edit.TOOL_RESULT_REMOVED."""
DEFAULT_WINDOW = 128_000
"""Inspect's DEFAULT_CONTEXT_WINDOW, for a model it does not know."""
MAX_ITERATIONS = 3
"""Extra passes _perform_compaction makes while still over the threshold."""
TRIMMED_NOTE = "[Older conversation trimmed: nothing stands in its place.]"


@dataclass(frozen=True, slots=True)
class InspectParams:
    strategy: str = "auto"
    """"auto", "summary", "trim" or "edit" (the Compaction* class)."""
    threshold: float = 0.9
    """Compact when a request exceeds this share of the window (at most 1.0) or this
    many tokens (above 1.0)."""
    window: int | None = None
    """The model's context window (None: the model's from genai-prices, else 128,000)."""
    preserve: float = 0.8
    """trim: the share of the conversation's messages kept."""
    keep_tool_uses: int = 3
    """edit: the newest tool uses whose results stay (0: clear them all)."""
    keep_thinking_turns: int | None = 1
    """edit: assistant messages whose thinking stays, newest first (None: "all")."""
    exclude_tools: tuple[str, ...] = ()
    """edit: tools whose results are never cleared (nor counted as tool uses)."""
    summary_tokens: int = 2_000
    """summary and auto: tokens of the summary (an assumption)."""

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(
                f"strategy: expected one of {', '.join(STRATEGIES)}, got {self.strategy!r}"
            )
        if not 0.0 <= self.preserve <= 1.0:
            raise ValueError("preserve must be between 0 and 1")
        if self.threshold <= 0:
            raise ValueError("threshold must be above 0")


class InspectPlanner:
    """The compacted input is the plan state (the trimmed or summarized range, the
    clear and thinking boundaries); a request appends its new messages to it, and one
    over the threshold compacts it. O(log M) per request."""

    def __init__(self, ctx: Context, params: InspectParams) -> None:
        sk = self.sk = ctx.skeleton
        self.p = params
        results = [
            n > 0 and not excluded(names, params.exclude_tools)
            for n, names in zip(sk.result_count, sk.tool_names, strict=True)
        ]
        note = ctx.count(TOOL_RESULT_REMOVED)
        edit = params.strategy == "edit"
        cleared = [MESSAGE_OVERHEAD + n * note for n in sk.result_count]
        thinking = list(thinking_of(sk)) if edit and params.keep_thinking_turns is not None else []
        self.statics = Statics(results if edit else [False] * sk.size, cleared, thinking=thinking)
        self.acct = Accountant(sk, self.statics)
        self.provider = ctx.provider
        window = params.window or run_window(sk, DEFAULT_WINDOW)
        t = params.threshold
        self.threshold = int(t * window) if t <= 1.0 else int(t)
        # The task: everything up to and including the first user message.
        first_user = next((i for i, u in enumerate(sk.user_turn) if u), sk.size)
        self.head = min(first_user + 1, sk.size)
        # Inspect's message count: one per tool result.
        self.weights = prefix_sums([max(1, n) for n in sk.result_count])
        # Tool uses Inspect counts: every result of a tool not excluded (a message
        # mixing excluded and other tools' results counts the others, cleared never).
        # (tool_names lists each tool once: a mixed message is taken to hold one result
        # of each excluded tool it names.)
        counted = [
            n - sum(1 for t in set(names.split(",")) if t in params.exclude_tools)
            for n, names in zip(sk.result_count, sk.tool_names, strict=True)
        ]
        self.results = [i for i, c in enumerate(counted) if c]
        self.uses = prefix_sums([counted[i] for i in self.results])
        self.assistants = [i for i, r in enumerate(sk.roles) if r == "assistant"]
        self.note = MESSAGE_OVERHEAD + params.summary_tokens
        self.kind = "t" if params.strategy == "trim" else "s"
        self.gap_end = 0  # trim and summary: the conversation starts here (0: untouched)
        self.clear_before = 0
        self.thinking_before = 0

    def current(self, end: int) -> Plan:
        cb, tb = self.clear_before, self.thinking_before
        stage = "clear" if cb or tb else "none"
        if self.gap_end > self.head:
            note = self.note if self.kind == "s" else 0
            stage = "summarize" if self.kind == "s" else "trim"
            return Plan(end, self.head, self.gap_end, self.kind, note, cb, 0, stage, tb)
        return Plan(end, clear_before=cb, stage=stage, thinking_before=tb)

    def plan(self, end: int) -> Plan:
        plan = self.current(end)
        size = self.provider(self.acct.sent(plan))
        if size <= self.threshold or end <= self.head:
            return plan
        for _ in range(1 + MAX_ITERATIONS):
            if not self._compact(end):
                break
            before, plan = size, self.current(end)
            size = self.provider(self.acct.sent(plan))
            if size <= self.threshold or size >= before:
                break
        return plan

    def _compact(self, end: int) -> bool:
        """One pass of the strategy over the current input; False when it changes
        nothing the plan can show."""
        strategy = self.p.strategy
        if strategy == "trim":
            start = max(self.gap_end, self.head)
            length = self.weights[end] - self.weights[start]
            drop = int(length * (1 - self.p.preserve))
            # The message holding the conversation's message number `drop`.
            cut = bisect.bisect_right(self.weights, self.weights[start] + drop) - 1
            cut = past_results(self.sk, max(cut, start), end)
            if cut <= start:
                return False
            self.gap_end = cut
            return True
        if strategy == "edit":
            cb, tb = self._clear_boundary(end), self._thinking_boundary(end)
            changed = cb > self.clear_before or tb > self.thinking_before
            self.clear_before = max(cb, self.clear_before)
            self.thinking_before = max(tb, self.thinking_before)
            return changed
        self.gap_end = end  # summary, auto: the whole conversation
        return True

    def _clear_boundary(self, end: int) -> int:
        """clear_before leaving the newest keep_tool_uses tool uses whole."""
        n = bisect.bisect_left(self.results, end)
        total = self.uses[n]
        keep = self.p.keep_tool_uses
        if keep > 0 and total <= keep:
            return 0
        if keep == 0:
            return self.results[n - 1] + 1 if n else 0
        first_kept = total - keep  # uses numbered from 0; this one is kept
        m = bisect.bisect_right(self.uses, first_kept) - 1  # message holding it
        # A message holding a kept use is kept whole (its other results too).
        return self.results[m - 1] + 1 if m > 0 else 0

    def _thinking_boundary(self, end: int) -> int:
        keep = self.p.keep_thinking_turns
        if keep is None:
            return 0
        n = bisect.bisect_left(self.assistants, end)
        if n <= keep:
            return 0
        return self.assistants[n - keep] if keep else end


class InspectPolicy:
    """Inspect AI's compaction handler with one of its strategies (`strategy`):
    CompactionEdit, CompactionTrim, CompactionSummary or CompactionAuto, over 90% of
    the window by default.

    Source: inspect-ai 0.3.285, inspect_ai/model/_compaction/ and model/_trim.py (see
    the module). Checked against the package's own strategies and handler in
    tests/systems/inspect_ai/test_differential.py. Approximate: "auto" is simulated as
    its summary fallback (native compaction's size is the provider's); thinking is
    removed only on providers that allow it (Inspect asks the model API); Inspect
    raises when compaction cannot get under the threshold, here the request is simply
    over; not modelled: keep_tool_inputs=False, the memory tool's warning, server-side
    tool uses, system messages after the first user message (Inspect moves them up)."""

    name = "inspect_compaction"
    label = "inspect_compaction: compact at 90% of the window (Inspect AI)"
    source = "inspect-ai 0.3.285 model/_compaction"
    Params = InspectParams

    def setup(self, ctx: Context, params: InspectParams) -> InspectPlanner:
        return InspectPlanner(ctx, params)

    def replacements(self, params: InspectParams) -> dict[str, str]:
        if params.strategy == "edit":
            return {"c": TOOL_RESULT_REMOVED}
        if params.strategy == "trim":
            return {"t": TRIMMED_NOTE}
        return {"s": SUMMARY_NOTE}
