"""Google ADK's event compaction, rule by rule on small hand-made runs (the expected cut
points are worked out from ADK's rules in the comments)."""

from __future__ import annotations

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from tests.engine.hand_made import (
    first_step_at,
    invocations,
    sim,
)


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
