"""Compaction events: every point where a run's history was replaced by a summary, the
ones its log records and the ones a what-if policy makes, each with what set it off
(its trigger, the size before and after, the threshold and window that made it fire,
and where each figure comes from), so a person can see why it compacted.

Sizes are tokens as the simulation counts what is sent (the provider's count when it
reconciles); a logged compaction's `logged_before` is the figure its log states
(Claude Code's compactMetadata.preTokens)."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from contextsim.analysis.problems import Problem
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.policy import Policy, policy_trigger
from contextsim.engine.simulate import REPLAY, Simulation, StepRecord, compaction_steps

TRIGGERS = ("auto", "manual", "policy")
"""What set a compaction off: the tool's own automatic compaction, the person (e.g.
/compact), or the simulated policy; "" when the log does not say."""


@dataclass(frozen=True, slots=True)
class Limit:
    """A size in tokens and where that figure comes from (the log, the tool's rule
    for its version, the person's setting)."""

    tokens: int
    source: str


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """One compaction, placed at `step`: the first request sent after it.

    `origin` is "logged" (the log records it) or "simulated" (the policy made it).
    `before` is the size of the last request before it and `after` the size of the
    first request after it (measured usage when logged and measured, else as sent),
    tokens; None when unknown. `logged_before` is the size the log says it compacted at.
    `threshold` is the size at which the system's compaction fires on this run and
    `window` the model's context window, each with its source; None when unknown."""

    step: int
    origin: str
    trigger: str
    before: int | None
    after: int | None
    logged_before: int | None
    threshold: Limit | None
    window: Limit

    @property
    def freed(self) -> int | None:
        """Tokens the compaction took out of the request (before - after)."""
        if self.before is None or self.after is None:
            return None
        return self.before - self.after

    def explain(self) -> str:
        """One line a person can read: who compacted, at what size, and why then."""
        who = {
            "auto": "automatic compaction",
            "manual": "manual compaction (asked for by the person)",
            "policy": "compaction by the simulated policy",
        }.get(self.trigger, "compaction (the log does not say what started it)")
        said = "logged " if self.origin == "logged" else ""
        text = f"{said}{who}"
        size = self.logged_before if self.logged_before is not None else self.before
        if size is not None:
            where = (
                "the log's preTokens" if self.logged_before is not None else "the request before"
            )
            text += f" at {size:,} tokens ({where})"
        if self.after is not None:
            text += f", {self.after:,} after"
        if self.threshold is not None and self.trigger != "manual":
            text += (
                f"; it compacts at {self.threshold.tokens:,} ({self.threshold.source})"
                f" of a {self.window.tokens:,} window ({self.window.source})"
            )
        else:
            text += f"; window {self.window.tokens:,} ({self.window.source})"
        return text


def compaction_events(
    sim: Simulation, threshold: Limit | None, window: Limit
) -> list[CompactionEvent]:
    """Every compaction of the simulation, in step order: the log's own (as_logged
    replays them; a what-if sends the full history instead and has none of them) and
    the ones the simulated policy makes (a request whose summarized span grows).
    `threshold` is the compaction threshold to show beside them (the system's own for a
    logged compaction, the policy's for a simulated one) and `window` the run's window."""
    records = sim.records
    if sim.policy == REPLAY:
        sk = sim.skeleton
        logged: list[CompactionEvent] = []
        steps = compaction_steps(sk)
        pres, triggers = sk.compaction_pre_tokens, sk.compaction_triggers
        for n, boundary in enumerate(sk.compactions):
            step = bisect_right(sk.ends, boundary)
            if step not in steps:
                continue  # after the last request
            if logged and logged[-1].step == step:
                logged.pop()  # two compactions before one request: it shows the last
            pre = pres[n] if n < len(pres) else None
            trigger = triggers[n] if n < len(triggers) else ""
            before = _size(records, step - 1) if step else None
            logged.append(
                CompactionEvent(
                    step, "logged", trigger, before, _size(records, step), pre, threshold, window
                )
            )
        return logged
    events = []
    previous_end = 0
    for r in records:
        plan = r.plan
        if plan.gap_kind == "s" and plan.gap_end > plan.gap_start and plan.gap_end > previous_end:
            before = records[r.step - 1].sent if r.step else None
            events.append(
                CompactionEvent(
                    r.step, "simulated", "policy", before, r.sent, None, threshold, window
                )
            )
        if plan.gap_kind == "s":
            previous_end = max(previous_end, plan.gap_end)
    return events


def _size(records: tuple[StepRecord, ...], step: int) -> int | None:
    """The request's measured size when logged, else what is sent."""
    r = records[step]
    return r.measured if r.measured is not None else r.sent


def compaction_threshold(
    policy: Policy, params: object, own: Policy | None, sk: Skeleton
) -> Limit | None:
    """The threshold shown beside a run's compactions: the simulated policy's when it
    has one (what made a simulated compaction fire), else that of `own`, the run's own
    system's compaction policy (registry.own_trigger) at its defaults (what made the
    log's automatic compactions fire); None when neither says."""
    found = policy_trigger(policy, sk, params)
    if found is not None:
        return Limit(*found)
    if own is None:
        return None
    found = policy_trigger(own, sk, own.Params())
    return None if found is None else Limit(found[0], f"{own.name} at its defaults: {found[1]}")


def event_problem(event: CompactionEvent) -> Problem:
    """A compaction as an entry of the problem list (information: it is where the
    context changed, and the list is where a person looks for what happened)."""
    return Problem(event.step, "compacted", "info", event.explain())
