"""SWE-agent's context policy: the `last_n_observations` history processor, which
replaces all but the newest N tool outputs by a one-line note, decided afresh for every
request (stateless). Units: tokens under the run's estimator; indexes are messages. An
observation is a message holding tool results.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.engine.accounting import Accountant
from contextsim.engine.clearing import ToolUses
from contextsim.engine.policy import Context, Plan, Statics

SWE_AGENT_NOTE = "Old environment output: ({lines} lines omitted)"


TYPICAL_LINES = 100
"""The skeleton keeps no line counts: the note is counted with this many lines (the
number is one or two tokens whatever it is)."""


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
