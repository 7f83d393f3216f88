"""Google ADK's event compaction (`EventsCompactionConfig`): summaries of older events
that replace them in every later request.

Two triggers, either or both. Sliding window: after an invocation (a user message and
every event answering it), once `compaction_interval` invocations have completed since
the last compaction, the events from `overlap_size` invocations before the first new one
through the last new one are summarized; summaries whose ranges only partly overlap all
stay in the prompt, one newer summary replaces an older one only when its range contains
it. Token threshold: before each model request (and after an invocation), when the
prompt tokens last measured reach `token_threshold`, every event since the last
compaction but the newest `event_retention_size` is summarized together with the
previous summary, which the new one replaces.

Source: google-adk 2.13.0, google/adk/apps/_configs.py (EventsCompactionConfig: no
defaults; each pair is set together, at least one), google/adk/apps/compaction.py
(_run_compaction_for_sliding_window, _run_compaction_for_token_threshold_config,
_safe_token_compaction_split_index, _is_range_worth_compacting, _latest_prompt_token_
count), google/adk/flows/llm_flows/context/_compaction.py (the request processor and
_process_compaction_events), google/adk/runners.py (_run_post_invocation_compaction).

Units: events are messages here (ADK puts parallel function responses in one event, as
a message holding several results); invocations are user turns; tokens as the provider
counts them (the reconciled size) for the threshold, which reads the usage of the last
request, and the estimator's for ADK's own chars/4 estimate when no usage is newer than
the last compaction. Summary sizes are a parameter.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.engine.condensing import SUMMARY_NOTE
from contextsim.engine.cuts import leading_system, violations
from contextsim.engine.policy import Context, Plan, plain_accounts


@dataclass(frozen=True, slots=True)
class AdkParams:
    compaction_interval: int | None = 3
    """Completed invocations since the last compaction that trigger a sliding-window
    compaction (None: no sliding window). ADK has no default; 3 and 1 are the values of
    its documentation's example."""
    overlap_size: int | None = 1
    """Invocations before the first new one included again in the next summary."""
    token_threshold: int | None = None
    """Prompt tokens at or above which older events are summarized (None: off)."""
    event_retention_size: int | None = None
    """Newest events the token-threshold compaction keeps raw."""
    summary_tokens: int = 1_000
    """Tokens of each summary (an assumption)."""

    def __post_init__(self) -> None:
        if (self.compaction_interval is None) != (self.overlap_size is None):
            raise ValueError("compaction_interval and overlap_size must be set together")
        if (self.token_threshold is None) != (self.event_retention_size is None):
            raise ValueError("token_threshold and event_retention_size must be set together")
        if self.compaction_interval is None and self.token_threshold is None:
            raise ValueError(
                "set compaction_interval and overlap_size, or token_threshold and "
                "event_retention_size (or both pairs)"
            )
        if self.compaction_interval is not None and self.compaction_interval < 1:
            raise ValueError("compaction_interval must be at least 1")
        if self.token_threshold is not None and self.token_threshold < 1:
            raise ValueError("token_threshold must be at least 1")


class AdkPlanner:
    """The prompt is the leading system messages, every surviving summary, and the
    events after the last compacted one. Summaries are kept as a stack of their ranges'
    first events: a new range supersedes those starting at or after its start. Each
    invocation and request is handled once: O(log M) per request, amortized."""

    def __init__(self, ctx: Context, params: AdkParams) -> None:
        sk = self.sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(sk)
        self.p = params
        self.head = leading_system(sk)
        turns = [i for i, t in enumerate(sk.user_turn) if t and i > self.head]
        self.starts = [self.head, *turns] if self.head < sk.size else []
        self.completed = 0  # invocations whose post-invocation compaction ran
        # violation[c]: the first result at or after c answering a call before c.
        self.violation = violations(sk, list(range(sk.size)))
        self.provider = ctx.provider
        self.note = MESSAGE_OVERHEAD + params.summary_tokens
        self.boundary = self.head  # events before it are covered by summaries
        self.summaries: list[int] = []  # first event of each surviving summary's range
        self.measured: int | None = None  # the last request's prompt tokens, if newer

    def current(self, end: int) -> Plan:
        if self.boundary <= self.head:
            return Plan(end)
        note = self.note * len(self.summaries)
        return Plan(end, self.head, self.boundary, "s", note, stage="summarize")

    def plan(self, end: int) -> Plan:
        while self.completed + 1 < len(self.starts) and self.starts[self.completed + 1] < end:
            self._after_invocation(self.completed, self.starts[self.completed + 1])
            self.completed += 1
        if self.p.token_threshold is not None:
            self._token_compaction(end)
        plan = self.current(end)
        self.measured = self.provider(self.acct.sent(plan))
        return plan

    def _prompt_tokens(self, end: int) -> int:
        if self.measured is not None:
            return self.measured
        # No usage since the last compaction: ADK estimates characters / 4.
        return self.acct.sent(self.current(end))

    def _summarize(self, first: int, last: int) -> None:
        """A summary of events [first, last) joins; those it contains leave."""
        while self.summaries and self.summaries[-1] >= first:
            self.summaries.pop()
        self.summaries.append(first)
        self.boundary = last
        self.measured = None

    def _token_compaction(self, e: int) -> bool:
        threshold, keep = self.p.token_threshold, self.p.event_retention_size
        assert threshold is not None and keep is not None
        if self._prompt_tokens(e) < threshold or e - self.boundary <= keep:
            return False
        split = e - keep
        if keep:
            # Move the split earlier until no kept result answers a compacted call.
            while split > self.boundary and self.violation[split] < e:
                split -= 1
        if split <= self.boundary:
            return False
        self._summarize(self.summaries[-1] if self.summaries else self.boundary, split)
        return True

    def _after_invocation(self, j: int, e: int) -> None:
        """Invocation j (events [starts[j], e)) is over: ADK's post-invocation pass."""
        if self.p.token_threshold is not None and self._token_compaction(e):
            return
        interval, overlap = self.p.compaction_interval, self.p.overlap_size
        if interval is None or overlap is None:
            return
        # New invocations: those with an event after the last compacted one.
        first_new = max(bisect.bisect_right(self.starts, self.boundary) - 1, 0)
        if self.boundary >= e or j - first_new + 1 < interval:
            return
        first = self.starts[max(0, first_new - overlap)]
        superseded = sum(1 for s in self.summaries if s >= first)
        removable = self.acct.span(self.boundary, e, 0) + superseded * self.note
        if removable <= (self.note if self.summaries else 0):
            return  # ADK: not worth a summary larger than what it removes
        self._summarize(first, e)


class AdkPolicy:
    """Google ADK's EventsCompactionConfig: a sliding window of summaries every
    `compaction_interval` invocations (overlapping by `overlap_size`), and/or a
    summary of all but the newest `event_retention_size` events once the prompt
    reaches `token_threshold` tokens.

    Source: google-adk 2.13.0, google/adk/apps/compaction.py and apps/_configs.py (see
    the module). Approximate: ADK compares serialized characters to decide a range is
    worth summarizing, here tokens; an unanswered call does not block compaction here;
    branches, rewinds and isolated sub-agent scopes are not modelled."""

    name = "adk_events_compaction"
    label = "adk_events_compaction: summarize every 3 invocations, overlap 1 (Google ADK)"
    source = "google-adk 2.13.0 apps/compaction.py, EventsCompactionConfig"
    Params = AdkParams

    def setup(self, ctx: Context, params: AdkParams) -> AdkPlanner:
        return AdkPlanner(ctx, params)

    def replacements(self, params: AdkParams) -> dict[str, str]:
        return {"s": SUMMARY_NOTE}
