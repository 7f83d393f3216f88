"""Codex CLI's auto-compaction, rule by rule on small hand-made runs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from contextsim.counting.builder import build
from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.engine.policy import make_params
from contextsim.model import Compaction, Message, Run, ThinkingPart, Usage
from contextsim.systems.codex.policies import CodexParams, compact_limit, reasoning_estimate
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


def _codex_limit(run: Run, **params: Any) -> int:
    sk = build(run, EST)
    return compact_limit(sk, make_params(CodexParams, {k: str(v) for k, v in params.items()}))


def test_the_limit_is_90_percent_of_the_model_window_the_rollout_states_95_percent_of():
    # gpt-5: model_context_window 258,400 in every token_count = 95% of 272,000.
    run = replace(task(*rounds(2)), context_window=258_400)
    assert _codex_limit(run) == 244_800
    assert _codex_limit(run, window=400_000) == 360_000
    assert _codex_limit(run, compact_limit=100_000) == 100_000


def test_codex_estimates_encrypted_reasoning_from_its_length():
    assert reasoning_estimate(0) == 0 and reasoning_estimate(866) == 0
    # (3/4 x 2000 - 650) bytes = 850 bytes: 212.5 tokens, rounded up.
    assert reasoning_estimate(2_000) == 213


def _reasoned(*messages: Message) -> list[Message]:
    return [
        replace(m, parts=(ThinkingPart("", opaque_chars=40_000), *m.parts))
        if m.role == "assistant"
        else m
        for m in messages
    ]


def test_reasoning_before_the_newest_user_turn_counts_toward_the_limit():
    # Each call carries 40,000 characters of encrypted reasoning: 7,338 tokens by
    # Codex's estimate, which the estimator's count of the messages does not hold.
    turn = _reasoned(*rounds(3, chars=400))
    run = task(*turn, user("again"), *_reasoned(*rounds(3, chars=400)))
    plain = task(*rounds(3, chars=400), user("again"), *rounds(3, chars=400))
    window = 24_000
    # Without the reasoning the run never reaches 90% of the window...
    assert not any(
        r.plan.stage == "summarize" for r in sim("codex_auto_compact", plain, window=window).records
    )
    # ...with it, the reasoning of the first turn (3 x 7,338) counts once the second
    # turn starts, and the run compacts there, not before.
    s = sim("codex_auto_compact", run, window=window)
    fired = [r for r in s.records if r.plan.stage == "summarize"]
    second_turn = next(i for i, m in enumerate(run.messages) if m.text == "again")
    assert fired and fired[0].end > second_turn


def test_the_measured_size_decides_before_any_compaction():
    # The estimator counts little, but the provider measured 250,000 at the second
    # response: Codex compacts after it, whatever the estimator says.
    calls = rounds(4, chars=400)
    measured = [
        replace(m, usage=Usage(250_000 if i == 2 else 1_000, output_tokens=10))
        if m.role == "assistant"
        else m
        for i, m in enumerate(calls)
    ]
    run = task(*measured)
    # The rollout compacted (at its end): its limit is the rule's, 244,800.
    run = replace(
        run,
        context_window=258_400,
        compactions=(Compaction(len(run.messages), 250_000, "auto"),),
    )
    s = sim("codex_auto_compact", run)
    fired = [r for r in s.records if r.plan.stage == "summarize"]
    assert fired and fired[0].step == 2


def test_a_rollout_that_went_past_the_limit_without_compacting_raises_it():
    calls = rounds(3, chars=400)
    measured = [
        replace(m, usage=Usage(250_000, output_tokens=10)) if m.role == "assistant" else m
        for m in calls
    ]
    run = replace(task(*measured), context_window=258_400)
    assert _codex_limit(run) == 250_011
    assert not any(r.plan.stage == "summarize" for r in sim("codex_auto_compact", run).records)
    assert _codex_limit(run, window=272_000) == 244_800  # a chosen window: the rule


def test_the_policy_says_where_its_limit_comes_from():
    from contextsim.counting.builder import build as built
    from contextsim.engine.policy import policy_trigger
    from contextsim.registry import POLICIES

    run = replace(task(*rounds(2)), context_window=258_400)
    limit, source = policy_trigger(POLICIES["codex_auto_compact"], built(run, EST), CodexParams())
    assert limit == 244_800 and "90% of the model's window (272,000)" in source
    assert policy_trigger(POLICIES["none"], built(run, EST), None) is None
