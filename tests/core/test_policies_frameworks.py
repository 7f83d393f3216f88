"""Letta, Google ADK and Inspect AI policies, rule by rule on small hand-made runs
(chars4: a result of 4,000 characters is 1,004 tokens with the message overhead). The
expected cut points are worked out from the real systems' rules in the comments."""

from __future__ import annotations

from typing import Any

import pytest

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.engine.simulate import Simulation, simulate
from contextsim.model import Message, Run, TextPart
from contextsim.registry import POLICIES
from contextsim.systems.adk.policies import AdkParams
from contextsim.systems.inspect_ai.policies import InspectParams
from contextsim.systems.letta.policies import LettaSummarizerParams
from tests.core.test_policies_editing import rounds, user

EST = ESTIMATORS["chars4"]
OK = Message("assistant", (TextPart("ok"),))
SYSTEM = Message("system", (TextPart("be brief"),))


def sim(policy: str, run: Run, **params: Any) -> Simulation:
    sk = build(run, EST)
    chosen = POLICIES[policy].Params(**params)
    return simulate(sk, POLICIES[policy], chosen, budget=10**7, hard_limit=10**8, count=EST.count)


def invocations(count: int, per: int, chars: int = 4_000) -> Run:
    """The system message, then `count` invocations: a user message, `per` rounds of
    one call and one result, and a plain answer (2 * per + 2 messages each)."""
    messages = [SYSTEM]
    for _ in range(count):
        messages += [user(), *rounds(per, chars), OK]
    return Run("r", (*messages, user("last")))


def first_step_at(s: Simulation, end: int) -> int:
    return next(r.step for r in s.records if r.end >= end)


def test_letta_partial_evict_summarizes_the_oldest_30_percent_after_an_invocation_over_the_window():
    s = sim("letta_summarizer", invocations(2, 5), window=5_000, summary_tokens=300)
    # Invocation 1 is messages 1-12 (its steps add up far past 5,000 tokens); Letta's
    # list is then the system message and messages 1-12: n = 13, the kept part starts
    # at the first assistant message at or after list index round(0.7 * 13) = 9, which
    # is history message 9 (a result): the next assistant message, 10.
    step = first_step_at(s, 14)
    plan = s.records[step].plan
    assert (plan.gap_start, plan.gap_end, plan.gap_kind) == (1, 10, "s")
    assert plan.gap_note == MESSAGE_OVERHEAD + 300
    assert all(r.plan.gap_end == 0 for r in s.records[:step])


def test_letta_partial_evict_does_nothing_while_the_invocations_fit_the_window():
    s = sim("letta_summarizer", invocations(3, 2, chars=400), window=100_000)
    assert all(r.plan.gap_end == 0 for r in s.records)


def test_letta_static_buffer_keeps_the_newest_messages_from_a_user_message_on():
    params = {"mode": "static_buffer", "message_buffer_limit": 10, "message_buffer_min": 4}
    s = sim("letta_summarizer", invocations(2, 5, chars=40), window=10**6, **params)
    # After invocation 1 the list holds 13 messages (> 10): eviction starts at list
    # index 13 - 4 = 9 and walks to a user message; there is none before the end, so
    # everything but the system message goes and nothing replaces it.
    step = first_step_at(s, 14)
    assert s.dispositions(step) == "k" + "t" * 12 + "k"
    assert s.records[step].plan.gap_note == 0


def test_letta_sliding_window_compacts_after_a_step_over_90_percent_and_keeps_an_assistant_first():
    window = 20_000
    s = sim("letta_sliding_window", invocations(1, 30), window=window, summary_tokens=500)
    first = next(r for r in s.records if r.plan.gap_end)
    before = s.records[first.step - 1]
    output = s.skeleton.tokens[before.end]
    assert before.sent + output > 0.9 * window  # the step that crossed the threshold
    plan = first.plan
    assert plan.gap_start == 1 and s.skeleton.roles[plan.gap_end] == "assistant"
    kept = s.accountant.span(0, 1, 0) + s.accountant.span(plan.gap_end, before.end + 2, 0)
    assert kept < 0.7 * window  # the goal: (1 - 0.30) of the window


def test_adk_sliding_window_overlapping_summaries_both_stay():
    # ADK's own example: interval 2, overlap 1. Invocations 1 and 2 are summarized
    # after invocation 2; invocation 3 alone triggers nothing; after invocation 4 the
    # summary covers invocations 2 to 4, and the first summary, only partly overlapped,
    # stays.
    s = sim(
        "adk_events_compaction",
        invocations(5, 1, chars=400),
        compaction_interval=2,
        overlap_size=1,
        summary_tokens=100,
    )
    per = 4  # messages per invocation: user, call, result, answer
    note = MESSAGE_OVERHEAD + 100
    third = s.records[first_step_at(s, 1 + 2 * per + 1)].plan
    assert (third.gap_start, third.gap_end, third.gap_note) == (1, 1 + 2 * per, note)
    fourth = s.records[first_step_at(s, 1 + 3 * per + 1)].plan
    assert fourth.gap_end == 1 + 2 * per  # invocation 3 alone: nothing new
    fifth = s.records[first_step_at(s, 1 + 4 * per + 1)].plan
    assert (fifth.gap_end, fifth.gap_note) == (1 + 4 * per, 2 * note)


def test_adk_token_threshold_keeps_the_newest_events_with_their_calls():
    s = sim(
        "adk_events_compaction",
        invocations(1, 12),
        compaction_interval=None,
        overlap_size=None,
        token_threshold=6_000,
        event_retention_size=3,
    )
    first = next(r for r in s.records if r.plan.gap_end)
    before = s.records[first.step - 1]
    assert before.sent >= 6_000  # the last measured prompt reached the threshold
    # The newest 3 events start with a result: the split moves back to its call.
    assert first.end - first.plan.gap_end == 4
    assert s.skeleton.roles[first.plan.gap_end] == "assistant"
    assert first.plan.gap_note == MESSAGE_OVERHEAD + 1_000


def test_inspect_summary_replaces_the_conversation_after_the_task_over_the_threshold():
    s = sim("inspect_compaction", invocations(1, 10), window=10_000, summary_tokens=200)
    first = next(r for r in s.records if r.plan.gap_end)
    assert s.records[first.step - 1].sent <= 9_000  # 90% of the window, not yet over
    # The task is the system message and the first user message; everything after it
    # became the summary, and later requests append to it.
    assert (first.plan.gap_start, first.plan.gap_end) == (2, first.end)
    later = s.records[first.step + 1].plan
    assert (later.gap_start, later.gap_end) == (2, first.end)


def test_inspect_edit_clears_all_but_the_newest_three_tool_uses():
    s = sim("inspect_compaction", invocations(1, 10), window=10_000, strategy="edit")
    first = next(r for r in s.records if r.plan.clear_before)
    letters = s.dispositions(first.step)
    results = [letters[i] for i in range(first.end) if s.skeleton.result_count[i]]
    assert results[-3:] == ["k", "k", "k"] and set(results[:-3]) == {"c"}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (lambda: AdkParams(compaction_interval=2, overlap_size=None), "set together"),
        (lambda: AdkParams(None, None), "set compaction_interval"),
        (lambda: LettaSummarizerParams(mode="sliding"), "mode"),
        (lambda: InspectParams(strategy="native"), "strategy"),
        (lambda: InspectParams(preserve=1.5), "preserve"),
    ],
)
def test_parameters_the_real_systems_refuse_are_refused(params, message):
    with pytest.raises(ValueError, match=message):
        params()
