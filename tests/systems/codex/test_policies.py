"""Codex CLI's auto-compaction, rule by rule on small hand-made runs."""

from __future__ import annotations

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from tests.engine.hand_made import (
    EST,
    rounds,
    sim,
    task,
    user,
)


def test_codex_compacts_after_a_response_reaches_90_percent_of_the_window():
    s = sim("codex_auto_compact", task(*rounds(10)), window=5_000, summary_tokens=300)
    limit = 4_500
    first = next(r for r in s.records if r.plan.stage == "summarize")
    before = s.records[first.step - 1]
    output = s.skeleton.tokens[before.end]
    assert before.sent + output >= limit and before.plan.stage == "none"
    # The next request is the instructions, the user's message and the summary only.
    assert first.plan.gap_start == 1 and first.plan.gap_end == first.end
    user_tokens = s.skeleton.tokens[1]
    prefix = EST.count(
        "Another language model started to solve this problem and produced a summary of "
        "its thinking process."
    )
    assert first.plan.gap_note == MESSAGE_OVERHEAD + prefix + 300 + user_tokens
    assert all(r.sent < limit + 1_100 for r in s.records)


def test_codex_keeps_at_most_the_newest_20000_tokens_of_user_messages():
    big = [user("u" * 40_000), *rounds(3, chars=40_000)]
    s = sim("codex_auto_compact", task(*big), window=20_000, user_message_tokens=5_000)
    compacted = [r for r in s.records if r.plan.stage == "summarize"]
    assert compacted and all(r.plan.gap_note < 5_000 + 2_100 for r in compacted)
