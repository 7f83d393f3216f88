"""Inspect AI's compaction strategies, rule by rule on small hand-made runs."""

from __future__ import annotations

from tests.engine.hand_made import (
    invocations,
    sim,
)


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
