"""Policies that hide old tool output and keep everything else, decided afresh for every
request (stateless): SWE-agent's `LastNObservations`, OpenHands' observation masking
and the OpenAI Agents SDK's tool-output trimmer.

All three replace a tool result's content in place, so a call keeps its result and the
request keeps every message; they differ in which results go and what stands in their
place. Units: tokens under the run's estimator; indexes are messages. An observation
is a message holding tool results (results answered in one message count as one).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from contextsim.accounting import Accountant
from contextsim.estimators import MESSAGE_OVERHEAD
from contextsim.policies.base import Context, Plan, Statics
from contextsim.policies.editing import ToolUses

SWE_AGENT_NOTE = "Old environment output: ({lines} lines omitted)"
TYPICAL_LINES = 100
"""The skeleton keeps no line counts: the note is counted with this many lines (the
number is one or two tokens whatever it is)."""
MASKED = "<MASKED>"
TRIMMED = "[Trimmed: {tool} output — {chars} chars → {preview} char preview]\n{head}..."


@dataclass(frozen=True, slots=True)
class LastNParams:
    n: int = 5
    """Observations kept whole, newest first (the config SWE-agent ships uses 5)."""
    polling: int = 1
    """The boundary moves only every `polling` observations, so the elided prefix, and
    with it the prompt cache, stays the same in between."""

    def __post_init__(self) -> None:
        if self.n < 1 or self.polling < 1:
            raise ValueError("n and polling must be at least 1")


class LastNPlanner:
    """Keep observation 0 (the task) and the newest `n` tool outputs; elide those
    between, the boundary moving in steps of `polling`. O(log M) per request."""

    def __init__(self, ctx: Context, params: LastNParams) -> None:
        sk = ctx.skeleton
        clearable = [n > 0 for n in sk.result_count]
        # SWE-agent counts the task (the first user message) as observation 0, the one
        # it never elides; every tool output after it is an observation.
        task = next((i for i, t in enumerate(sk.user_turn) if t), -1)
        results = [i for i, r in enumerate(clearable) if r]
        if task < 0 and results:
            task = results[0]  # no task message: the first output stands in for it
            clearable[task] = False
        self.observations = sorted({task, *results} - {-1})
        note = MESSAGE_OVERHEAD + ctx.count(SWE_AGENT_NOTE.format(lines=TYPICAL_LINES))
        self.statics = Statics(clearable, [note] * sk.size)
        self.acct = Accountant(sk, self.statics)
        self.uses = ToolUses(sk, clearable)
        self.p = params

    def plan(self, end: int) -> Plan:
        seen = bisect.bisect_left(self.observations, end)
        last_removed = max(0, (seen // self.p.polling) * self.p.polling - self.p.n)
        count = max(0, last_removed - 1)  # observations 1 .. last_removed - 1: outputs
        if count == 0:
            return Plan(end)
        return Plan(end, clear_before=self.uses.boundary(count), stage="clear")


class LastNPolicy:
    """SWE-agent's `LastNObservations` history processor: every observation but the
    first and the newest `n` becomes "Old environment output: (N lines omitted)".

    Source: SWE-agent, sweagent/agent/history_processors.py, LastNObservations (n
    required, polling 1; the shipped config uses n 5). Recomputed from the full history
    before every query. Not modelled: the keep/remove output tags, images."""

    name = "swe_agent_last_n"
    label = "swe_agent_last_n: elide all but the newest 5 observations (SWE-agent)"
    source = "SWE-agent history_processors.LastNObservations"
    Params = LastNParams

    def setup(self, ctx: Context, params: LastNParams) -> LastNPlanner:
        return LastNPlanner(ctx, params)

    def replacements(self, params: LastNParams) -> dict[str, str]:
        return {"c": SWE_AGENT_NOTE.format(lines="N")}


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
