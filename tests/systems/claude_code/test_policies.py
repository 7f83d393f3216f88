"""Claude Code's auto-compact, rule by rule on a small hand-made run."""

from __future__ import annotations

from tests.engine.hand_made import (
    rounds,
    sim,
    task,
)


def test_claude_code_summarizes_all_but_the_newest_round_at_the_threshold():
    s = sim(
        "claude_code_auto_compact", task(*rounds(10)), window=8_000, max_output=2_000, buffer=1_000
    )
    threshold = 8_000 - 2_000 - 1_000
    first = next(r for r in s.records if r.plan.stage == "summarize")
    assert s.records[first.step - 1].sent < threshold
    assert s.skeleton.roles[first.plan.gap_end] == "assistant"  # the newest call, kept
    assert first.plan.gap_start == 1  # the system prompt stays
    assert all(r.sent < threshold + 1_100 for r in s.records)
