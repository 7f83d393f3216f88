"""The policies of SWE-agent, OpenHands, the OpenAI Agents SDK, Codex CLI and Claude
Code, rule by rule on small hand-made runs (chars4: a result of 4,000 characters is
1,004 tokens with the message overhead)."""

from __future__ import annotations

from typing import Any

import pytest

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.engine.simulate import Simulation, simulate
from contextsim.model import Message, Run, TextPart
from contextsim.registry import POLICIES
from tests.core.test_policies_editing import call, result, rounds, user

EST = ESTIMATORS["chars4"]


def sim(policy: str, run: Run, **params: Any) -> Simulation:
    chosen = POLICIES[policy].Params(**params)
    sk = build(run, EST)
    return simulate(sk, POLICIES[policy], chosen, budget=10**7, hard_limit=10**8, count=EST.count)


def results_letters(s: Simulation, step: int) -> str:
    """The dispositions of the tool results of request `step`, oldest first."""
    letters = s.dispositions(step)
    return "".join(letters[i] for i in range(len(letters)) if s.skeleton.result_count[i])


def task(*messages: Message) -> Run:
    return Run("r", (Message("system", (TextPart("be brief"),)), user(), *messages))


def test_swe_agent_keeps_the_task_and_the_newest_n_observations():
    s = sim("swe_agent_last_n", task(*rounds(8)), n=5)
    # Request 8 sees 9 observations, the task first (SWE-agent counts it as observation
    # 0 and never elides it): the newest 5 tool outputs stay, the 3 before are elided,
    # total - n - 1 as SWE-agent's own tests expect.
    assert results_letters(s, 8) == "ccckkkkk"
    assert s.dispositions(8)[1] == "k"  # the task
    assert [results_letters(s, k).count("c") for k in range(9)] == [0] * 6 + [1, 2, 3]
    assert s.records[8].stage == "clear"


def test_swe_agent_polling_moves_the_boundary_in_steps_so_the_prefix_stays_cached():
    s = sim("swe_agent_last_n", task(*rounds(12)), n=2, polling=3)
    elided = [results_letters(s, k).count("c") for k in range(13)]
    # Request k sees k + 1 observations (the task and k outputs); the boundary is at
    # ((k + 1) // 3) * 3 - 2 and the task is never elided.
    assert elided == [0, 0, 0, 0, 0, 3, 3, 3, 6, 6, 6, 9, 9]
    stable = [s.records[k].cached for k in (7, 8)]
    assert all(c > 0 for c in stable)


def test_openhands_masking_masks_observations_outside_the_attention_window():
    s = sim("openhands_observation_masking", task(*rounds(6)), attention_window=5)
    # Request 6 has 14 messages: those before index 9 are outside the window.
    assert results_letters(s, 6) == "ccckkk"
    note = EST.count("<MASKED>") + MESSAGE_OVERHEAD
    assert s.statics.cleared_tokens[3] == note


def test_the_trimmer_previews_long_output_older_than_the_recent_user_turns():
    turn = [*rounds(2, chars=4_000), Message("assistant", (TextPart("ok"),))]
    short = [call("s1"), result("s1", chars=300), Message("assistant", (TextPart("ok"),))]
    run = task(*turn, user("next"), *short, user("more"), *rounds(1), user("last"))
    s = sim("openai_tool_output_trimmer", run)
    final = len(s.records) - 1
    # Two recent user turns ("more", "last") are left alone; before them the long
    # results are trimmed, the 300-character one is not (at most 500 characters).
    assert results_letters(s, final) == "cckk"
    # A trimmed result costs its header and a 200-character preview (about 50 tokens).
    trimmed = [t for t, c in zip(s.statics.cleared_tokens, s.statics.clearable, strict=True) if c]
    assert len(trimmed) == 3 and all(60 < t < 110 for t in trimmed)
    only_grep = sim("openai_tool_output_trimmer", run, trimmable_tools=("grep",))
    assert "c" not in results_letters(only_grep, final)


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


@pytest.mark.parametrize(
    ("policy", "params", "message"),
    [
        ("swe_agent_last_n", {"n": 0}, "n and polling must be at least 1"),
        ("openhands_observation_masking", {"attention_window": 0}, "attention_window"),
        ("openai_tool_output_trimmer", {"recent_turns": 0}, "recent_turns"),
        ("openhands_llm_summarizing", {"max_size": 3}, "max_size must be at least 4"),
    ],
)
def test_bad_parameters_are_refused_naming_them(policy, params, message):
    with pytest.raises(ValueError, match=message):
        sim(policy, task(*rounds(2)), **params)
