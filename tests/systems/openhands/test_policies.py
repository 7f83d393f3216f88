"""The policies of SWE-agent, OpenHands, the OpenAI Agents SDK, Codex CLI and Claude
Code, rule by rule on small hand-made runs (chars4: a result of 4,000 characters is
1,004 tokens with the message overhead)."""

from __future__ import annotations

from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from tests.engine.hand_made import results_letters, rounds, sim, task

EST = ESTIMATORS["chars4"]


def test_openhands_masking_masks_observations_outside_the_attention_window():
    s = sim("openhands_observation_masking", task(*rounds(6)), attention_window=5)
    # Request 6 has 14 messages: those before index 9 are outside the window.
    assert results_letters(s, 6) == "ccckkk"
    note = EST.count("<MASKED>") + MESSAGE_OVERHEAD
    assert s.statics.cleared_tokens[3] == note


def test_amortized_forgetting_halves_the_view_past_max_size():
    s = sim("openhands_amortized_forgetting", task(*rounds(12)), max_size=10, keep_first=1)
    sizes = []
    for r in s.records:
        letters = s.dispositions(r.step)
        sizes.append(sum(1 for x in letters if x != "t"))
        if "t" in letters:
            assert letters[0] == "k" and letters.index("t") == 1
    assert max(sizes) <= 10
    assert any(r.plan.stage == "trim" for r in s.records)
    # After a condensation the view is back to at most half of max_size.
    first = next(r for r in s.records if r.plan.stage == "trim")
    assert sizes[first.step] <= 5


def test_llm_summarizing_puts_one_summary_after_the_kept_head():
    s = sim("openhands_llm_summarizing", task(*rounds(12)), max_size=10, keep_first=1)
    first = next(r for r in s.records if r.plan.stage == "summarize")
    assert first.plan.gap_start == 1 and first.plan.gap_kind == "s"
    assert first.plan.gap_note == MESSAGE_OVERHEAD + 1_000
    kept = first.end - first.plan.gap_end
    assert 1 + 1 + kept <= 5  # head, summary, tail: half of max_size
