"""OpenHands' context policies: its condensers, as configured by the `[condenser]`
section of config.toml (observation masking, amortized forgetting, LLM summarizing).

Masking hides old tool output in place and is decided afresh for every request
(stateless). The two rolling condensers keep a head, drop or summarize the events
[head, boundary) and send [boundary, end); the boundary only moves forward, when the
view is full again (stateful). Events are counted as messages; the size of a summary
the model would write is a parameter (no log says it in advance).
"""

from __future__ import annotations

from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.engine.accounting import Accountant
from contextsim.engine.condensing import SUMMARY_NOTE, check_window, past_results
from contextsim.engine.policy import Context, Plan, Statics, plain_accounts

FORGOTTEN_NOTE = "[Earlier events were forgotten: nothing stands in their place.]"


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


MASKED = "<MASKED>"


@dataclass(frozen=True, slots=True)
class MaskingParams:
    attention_window: int = 100
    """Events (messages) at the end of the view whose observations stay whole."""

    def __post_init__(self) -> None:
        if self.attention_window < 1:
            raise ValueError("attention_window must be at least 1")


class MaskingPlanner:
    """Mask every observation older than the newest `attention_window` messages."""

    def __init__(self, ctx: Context, params: MaskingParams) -> None:
        sk = ctx.skeleton
        note = MESSAGE_OVERHEAD + ctx.count(MASKED)
        self.statics = Statics([n > 0 for n in sk.result_count], [note] * sk.size)
        self.acct = Accountant(sk, self.statics)
        self.window = params.attention_window

    def plan(self, end: int) -> Plan:
        cb = end - self.window
        if cb <= 0 or self.acct.clear_count[cb] == 0:
            return Plan(end)
        return Plan(end, clear_before=cb, stage="clear")


class MaskingPolicy:
    """OpenHands' `ObservationMaskingCondenser`: observations older than the attention
    window become "<MASKED>"; actions and messages stay.

    Source: OpenHands, openhands/memory/condenser/impl/observation_masking_condenser.py
    and core/config/condenser_config.py (attention_window 100 in the config). Stateless:
    each view is rebuilt from the full event stream. Events are counted as messages.
    Not modelled: OpenHands then drops the assistant message of a masked action (its
    observation no longer carries the call's id)."""

    name = "openhands_observation_masking"
    label = "openhands_observation_masking: mask observations older than 100 events"
    source = "OpenHands ObservationMaskingCondenser"
    Params = MaskingParams

    def setup(self, ctx: Context, params: MaskingParams) -> MaskingPlanner:
        return MaskingPlanner(ctx, params)

    def replacements(self, params: MaskingParams) -> dict[str, str]:
        return {"c": MASKED}
