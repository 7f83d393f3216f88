"""Letta, Google ADK and Inspect AI policies, rule by rule on small hand-made runs
(chars4: a result of 4,000 characters is 1,004 tokens with the message overhead). The
expected cut points are worked out from the real systems' rules in the comments."""

from __future__ import annotations

from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from tests.engine.hand_made import first_step_at, invocations, sim

EST = ESTIMATORS["chars4"]


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
