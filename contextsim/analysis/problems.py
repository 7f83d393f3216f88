"""Problem detectors over step records: each finding has a step, a kind, a severity and
a one-line explanation a person can act on."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter

from contextsim.counting.memory import earlier, per_skeleton, remember
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.accounting import Accountant
from contextsim.engine.columns import columns, shared
from contextsim.engine.simulate import REPLAY, Simulation, compaction_steps

KINDS = (
    "rejected",
    "over_budget",
    "underestimate",
    "cache_break",
    "oversized_result",
    "repeated_call",
    "no_progress",
    "early_stop",
    "step_ceiling",
    "compaction",
    "compacted",
    "refused",
)


@dataclass(frozen=True, slots=True)
class Problem:
    """A finding at `step`. `span` is the first and last steps of the streak it stands
    for, `message` the message it is about (a result), `excess` the tokens
    its detector measured against a limit or the cache (over the budget, written to the
    cache again). `tokens` and `dollars` are what it cost the run and `impact` says how
    they were counted (contextsim.analysis.impact; 0 and "" until it is priced)."""

    step: int
    kind: str
    severity: str
    detail: str
    span: tuple[int, int] | None = None
    message: int | None = None
    excess: int = 0
    tokens: int = 0
    dollars: float = 0.0
    impact: str = ""


def detect(
    sim: Simulation,
    *,
    reference: tuple[int, ...] | None = None,
    typical_steps: int | None = None,
    no_progress_steps: int = 3,
) -> list[Problem]:
    """Every problem of a simulation, ordered by step then kind.

    `reference` holds per-message tokens by a reference tokenizer, used to judge
    estimates where the log measured nothing. `typical_steps` (e.g. the median of a
    collection) sets the recommended step ceiling.
    """
    found = [
        *_limits(sim),
        *_by_record(sim, reference),
        *_results(sim, no_progress_steps),
        *_ending(sim, typical_steps),
        *_compactions(sim),
    ]
    return sorted(found, key=lambda p: (p.step, KINDS.index(p.kind)))


_BY_RECORD = "problems_by_record"


def _by_record(sim: Simulation, reference: tuple[int, ...] | None) -> list[Problem]:
    """The problems each request shows by itself (or beside the one before it):
    underestimates and cache breaks, in step order. A simulation of a live run's grown
    skeleton that took over the records of the one it grew from (as_logged's replay,
    contextsim.engine.simulate) takes over their problems too, and looks only at the new
    records: the same records under the same limits and terms show the same problems.
    Only as_logged's are kept (one per skeleton): no other policy takes records over."""
    if reference is not None or sim.policy != REPLAY:
        return [*_underestimates(sim, reference, 0), *_cache_breaks(sim, 0)]
    rec = sim.reconciliation
    terms = None if rec is None else (rec.scale, rec.overhead, rec.later)
    key = (sim.budget, sim.hard_limit, terms)
    before = earlier(sim.skeleton, _BY_RECORD)
    keep = shared(before[1], sim.records) if before is not None and before[0] == key else 0
    kept = [p for p in before[2] if p.step < keep] if before is not None and keep else []
    found = sorted(
        [*_underestimates(sim, None, keep), *_cache_breaks(sim, keep)], key=attrgetter("step")
    )
    problems = kept + found
    remember(sim.skeleton, _BY_RECORD, (key, sim.records, problems))
    return problems


def _until(first: int, last: int) -> str:
    return "" if first == last else f"; so are steps {first + 1}-{last} ({last - first} more)"


def _limits(sim: Simulation) -> list[Problem]:
    """One problem per streak of rejected (or over-budget) requests, at its first step:
    a run that stays over the limit for 5,000 requests has one thing to fix, not 5,000."""
    out = []
    for first, last, kind in columns(sim).streaks:
        r = sim.records[first]
        if kind == "rejected":
            detail = (
                f"{r.sent:,} tokens is over the {sim.hard_limit:,} hard limit: "
                f"the model rejects it; retrying cannot help{_until(first, last)}"
            )
            out.append(Problem(first, kind, "error", detail, span=(first, last)))
        else:
            detail = (
                f"{r.sent:,} tokens is still over the {sim.budget:,} budget after every "
                f"stage ({r.stage}){_until(first, last)}"
            )
            out.append(Problem(first, kind, "warning", detail, span=(first, last)))
    return out


def _underestimates(
    sim: Simulation, reference: tuple[int, ...] | None, start: int
) -> list[Problem]:
    """Requests from `start` on that the harness's own count said fit the budget and
    the provider's count (reconciled, else measured usage or a reference tokenizer)
    says do not: the seed incident. The text names the cause: the estimator or the
    unlogged part."""
    ref_acct = None
    if reference is not None:
        ref_acct = Accountant(sim.skeleton, sim.statics, reference)
    rec = sim.reconciliation
    out = []
    for r in sim.records[start:]:
        if r.estimated > sim.budget:
            continue  # the harness knew it did not fit: over_budget says so
        cause = ""
        if rec is not None:
            actual, source = r.sent, "the provider's count (reconciled)"
            undercount = round((rec.scale - 1) * r.estimated)
            overhead = r.sent - r.estimated - undercount
            cause = (
                f"; mostly the unlogged part ({overhead:,} tokens the log does not hold)"
                if overhead >= undercount
                else f"; mostly the estimator (the provider counts x{rec.scale:.2f})"
            )
        elif r.measured is not None and r.full:
            # The estimator's error on this history applies to what the policy sends.
            actual, source = round(r.sent * r.measured / r.full), "measured usage"
        elif ref_acct is not None:
            actual, source = ref_acct.sent(r.plan), "the reference tokenizer"
        else:
            continue
        if actual > sim.budget:
            limit = "hard limit" if actual > sim.hard_limit else "budget"
            out.append(
                Problem(
                    r.step,
                    "underestimate",
                    "error" if actual > sim.hard_limit else "warning",
                    f"{sim.skeleton.estimator} estimated {r.estimated:,} tokens (fits the "
                    f"{sim.budget:,} budget) but {source} says about {actual:,}: over the "
                    f"{limit}{cause}",
                    excess=actual - sim.budget,
                )
            )
    return out


def _cache_breaks(sim: Simulation, start: int) -> list[Problem]:
    """Cache breaks at the requests from `start` on."""
    return [*_simulated_cache_breaks(sim, start), *_measured_cache_misses(sim, start)]


def _measured_cache_misses(sim: Simulation, start: int) -> list[Problem]:
    """Under as_logged: requests at which the provider's measured cache read fell below
    what the previous request had read and written (a real cache miss: a changed prefix
    or an expired cache), except right after a logged compaction, which rewrites it."""
    if sim.policy != REPLAY:
        return []
    usage, out = sim.skeleton.usage, []
    compacted = set(compaction_steps(sim.skeleton))
    for k in range(max(start, 1), len(usage)):
        before, now = usage[k - 1], usage[k]
        if before is None or now is None or k in compacted:
            continue
        cached_before = before.cache_read + before.cache_write
        lost = cached_before - now.cache_read
        if cached_before and lost > max(1_000, cached_before // 20):
            out.append(
                Problem(
                    k,
                    "cache_break",
                    "warning",
                    f"measured: the provider read {now.cache_read:,} tokens from its cache "
                    f"where the previous request had {cached_before:,} cached: a real cache "
                    f"miss, {lost:,} tokens written again",
                    excess=lost,
                )
            )
    return out


def _simulated_cache_breaks(sim: Simulation, start: int) -> list[Problem]:
    out = []
    replay = sim.policy == REPLAY
    first = max(start - 1, 0)
    for before, r in zip(sim.records[first:], sim.records[first + 1 :], strict=False):
        if replay and r.measured is not None:
            continue  # what was sent is measured: its real misses are reported instead
        lost = before.sent - r.cached
        if lost > 0 and lost > before.sent // 20:
            share = lost / before.sent
            what = "cleared" if r.plan.clear_before != before.plan.clear_before else "cut"
            out.append(
                Problem(
                    r.step,
                    "cache_break",
                    "warning" if share > 0.5 else "info",
                    f"only {r.cached:,} of the previous request's {before.sent:,} tokens could be "
                    f"read from the prompt cache ({share:.0%} rewritten): what was "
                    f"{what} changed",
                    excess=lost,
                )
            )
    return out


@dataclass(frozen=True, slots=True)
class _ResultFacts:
    """What a run's tool results show whatever the policy (kept per skeleton)."""

    first_steps: list[tuple[int, int]]
    repeats: list[tuple[int, int, int]]
    stalls: list[tuple[int, int]]
    """(first, last) steps of each streak of streak_limit steps without a new result."""


def _result_facts(sk: Skeleton, streak_limit: int) -> _ResultFacts:
    first_steps: list[tuple[int, int]] = []
    repeats: list[tuple[int, int, int]] = []
    seen: dict[tuple[str, str], int] = {}
    useful_by_step: dict[int, bool] = {}
    ends, steps = sk.ends, sk.steps
    # Only messages with results are visited (picked in C).
    for i in compress(range(len(sk.result_count)), sk.result_count):
        step = bisect.bisect_right(ends, i)
        if step >= steps:
            continue
        first_steps.append((i, step))
        key = (sk.call_key[i], sk.result_key[i])
        repeat = key in seen
        if repeat:
            repeats.append((i, step, seen[key]))
        else:
            seen[key] = step
        useful_by_step[step] = useful_by_step.get(step, False) or not (repeat or sk.is_error[i])
    stalls: list[tuple[int, int]] = []
    streak, began = 0, 0
    for step in sorted(useful_by_step):
        streak = 0 if useful_by_step[step] else streak + 1
        if streak == 1:
            began = step
        if streak == streak_limit:
            stalls.append((began, step))
    return _ResultFacts(first_steps, repeats, stalls)


def _results(sim: Simulation, streak_limit: int) -> list[Problem]:
    sk = sim.skeleton
    facts = per_skeleton(sk, ("results", streak_limit), lambda: _result_facts(sk, streak_limit))
    quarter = sim.budget // 4
    out = [
        Problem(
            step,
            "oversized_result",
            "info",
            f"a {sk.tool_names[i] or 'tool'} result of {sk.tokens[i]:,} tokens "
            f"is over a quarter of the budget ({quarter:,})",
            message=i,
        )
        for i, step in facts.first_steps
        if sk.tokens[i] > quarter
    ]
    out += [
        Problem(
            step,
            "repeated_call",
            "info",
            f"{sk.tool_names[i] or 'a tool'} was called with the same arguments "
            f"and returned the same result as before step {before}",
            message=i,
        )
        for i, step, before in facts.repeats
    ]
    out += [
        Problem(
            step,
            "no_progress",
            "warning",
            f"{streak_limit} steps in a row brought no new result (only repeats or errors)",
            span=(began, step),
        )
        for began, step in facts.stalls
    ]
    return out


FULL_ANSWER = 200
"""Tokens of a subagent's final answer from which it is taken as a full report of its
work, not a stop to check (a subagent that wrote a long answer finished its task)."""


def _ending(sim: Simulation, typical_steps: int | None) -> list[Problem]:
    sk = sim.skeleton
    if not sim.records:
        return []
    last = sim.records[-1]
    share = last.full / sim.budget
    out: list[Problem] = []
    if sk.compaction_request:
        return out  # it answers with the summary it was asked for: it ends where it should
    if sk.final_answer and sk.final_mentions_space and share < 0.5:
        out.append(
            Problem(
                last.step,
                "early_stop",
                "warning",
                f"stopped at {last.full:,} of {sim.budget:,} budget tokens ({share:.0%}) "
                "saying it was saving space: old results are cleared for it",
            )
        )
    elif sk.final_answer and sk.subagent and share < 0.3 and sk.tokens[-1] < FULL_ANSWER:
        out.append(
            Problem(
                last.step,
                "early_stop",
                "info",
                f"the subagent answered at {last.full:,} of {sim.budget:,} budget tokens "
                f"({share:.0%}): check it finished its task",
            )
        )
    steps = len(sk.responses) - sk.responses.count(None)
    if not sk.final_answer and steps >= 10 and (steps % 10 == 0 or steps % 25 == 0):
        typical = typical_steps or steps
        out.append(
            Problem(
                last.step,
                "step_ceiling",
                "warning",
                f"ended without a final answer after exactly {steps} steps, like a step "
                f"limit; a ceiling of {round(typical * 2.5)} (typical {typical} x 2.5) "
                "is recommended",
            )
        )
    return out


def _compactions(sim: Simulation) -> list[Problem]:
    sk = sim.skeleton
    out = []
    for at in sk.compactions:
        split = bisect.bisect_right(sk.ends, at)
        before = next((u for u in reversed(sk.usage[:split]) if u is not None), None)
        after_step = next((k for k in range(split, sk.steps) if sk.usage[k] is not None), None)
        if before is None or after_step is None:
            continue
        after = sk.usage[after_step]
        assert after is not None
        if after.context >= 0.9 * before.context:
            out.append(
                Problem(
                    after_step,
                    "compaction",
                    "warning",
                    f"the log compacted the conversation but the context did not shrink: "
                    f"{before.context:,} tokens before, {after.context:,} after",
                )
            )
    return out
