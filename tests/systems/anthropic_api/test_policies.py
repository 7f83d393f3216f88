"""Anthropic's API mechanisms: thinking clearing (`anthropic_clear_thinking`), both
context edits in one list (`anthropic_context_editing`) and server-side compaction
(`anthropic_compaction`). Expected figures are the estimator's counts of the inputs."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.counting.skeleton import from_dict, to_dict
from contextsim.engine.policy import make_params
from contextsim.engine.simulate import explain, simulate
from contextsim.model import (
    KINDS,
    Message,
    Run,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from contextsim.registry import POLICIES
from contextsim.systems.anthropic_api.compaction import AnthropicCompactionParams
from contextsim.systems.anthropic_api.policies import (
    AnthropicClearParams,
    AnthropicEditingParams,
    ClearThinkingParams,
)
from contextsim.truth.reconcile import Reconciliation
from tests.engine.histories import histories

EST = ESTIMATORS["chars4"]


def tokens(text: str) -> int:
    return EST.count(text)


def whole(*texts: str) -> int:
    """A message of these parts as the estimator counts it (parts joined by newlines)."""
    return EST.count("\n".join(texts)) + MESSAGE_OVERHEAD


def sim(run: Run, policy: str, params=None, budget=10_000_000, hard_limit=10_000_000, **kw):
    sk = build(run, EST)
    return simulate(
        sk, POLICIES[policy], params, budget=budget, hard_limit=hard_limit, count=EST.count, **kw
    )


SYSTEM = Message("system", (TextPart("s" * 400),))


def user(n: int) -> Message:
    return Message("user", (TextPart("u" * n),))


def think(n: int, text: str = "answer") -> Message:
    return Message("assistant", (ThinkingPart("t" * n), TextPart(text)))


def think_call(n: int, call: str) -> Message:
    return Message("assistant", (ThinkingPart("t" * n), ToolCallPart(call, "read", "{}")))


def result(call: str, n: int) -> Message:
    return Message("user", (ToolResultPart(call, "r" * n),))


def three_turns() -> Run:
    """Three user turns, each answered with 4,000, 8,000 and 12,000 characters of
    thinking, then a fourth question pending."""
    return Run(
        "t",
        (
            SYSTEM,
            user(400),
            think(4_000),
            user(400),
            think(8_000),
            user(400),
            think(12_000),
            user(400),
        ),
    )


# ---- the skeleton ----------------------------------------------------------------


def test_the_skeleton_counts_each_messages_thinking_apart():
    sk = build(three_turns(), EST)
    four, eight, twelve = tokens("t" * 4_000), tokens("t" * 8_000), tokens("t" * 12_000)
    assert sk.thinking_tokens == (0, 0, four, 0, eight, 0, twelve, 0)
    assert from_dict(to_dict(sk)).thinking_tokens == sk.thinking_tokens


def test_the_composition_counts_thinking_as_its_own_kind():
    run = three_turns()
    s = sim(run, "none")
    kept = dict(zip(("system", "user", "assistant", "tool_call"), s.kept_by_kind(3), strict=False))
    thinking = s.kept_by_kind(3)[KINDS.index("thinking")]
    assert thinking == tokens("t" * 4_000) + tokens("t" * 8_000) + tokens("t" * 12_000)
    answers = 3 * (whole("t" * 4_000, "answer") - tokens("t" * 4_000))
    assert kept["assistant"] == answers
    assert sum(s.kept_by_kind(3)) == s.composition(3)["kept"]


# ---- clear_thinking_20251015 ----------------------------------------------------


def test_the_thinking_of_all_but_the_newest_turn_is_cleared_by_default():
    run = three_turns()
    none, cleared = sim(run, "none"), sim(run, "anthropic_clear_thinking")
    last = cleared.records[-1]
    removed = tokens("t" * 4_000) + tokens("t" * 8_000)
    assert last.sent == none.records[-1].sent - removed
    assert cleared.dispositions(last.step) == "kkckckkk"
    assert cleared.composition(last.step)["removed_cleared"] == removed
    assert last.stage == "clear"


def test_keep_two_turns_keeps_the_thinking_of_the_two_newest():
    run = three_turns()
    s = sim(run, "anthropic_clear_thinking", ClearThinkingParams(keep=2))
    assert s.dispositions(s.records[-1].step) == "kkckkkkk"
    assert s.records[-1].sent == sim(run, "none").records[-1].sent - tokens("t" * 4_000)


def test_keep_all_clears_no_thinking():
    run = three_turns()
    kept = sim(run, "anthropic_clear_thinking", ClearThinkingParams(keep_all=True))
    assert [r.sent for r in kept.records] == [r.sent for r in sim(run, "none").records]
    assert all("c" not in kept.dispositions(r.step) for r in kept.records)


def test_a_tool_loop_is_one_assistant_turn_whose_thinking_is_kept():
    run = Run(
        "loop",
        (
            user(400),
            think(4_000),
            user(400),
            think_call(4_000, "a"),
            result("a", 400),
            think_call(4_000, "b"),
            result("b", 400),
        ),
    )
    s = sim(run, "anthropic_clear_thinking")
    # The newest turn began at message 2: its three assistant messages keep thinking.
    assert s.dispositions(s.records[-1].step) == "kckkkkk"


def test_a_turn_without_thinking_does_not_use_up_keep():
    run = Run("t", (user(400), think(4_000), user(400), Message("assistant", (TextPart("a"),))))
    s = sim(run, "anthropic_clear_thinking")
    assert "c" not in s.dispositions(s.records[-1].step)


def test_clearing_thinking_breaks_the_cache_where_it_starts():
    run = three_turns()
    s = sim(run, "anthropic_clear_thinking")
    # Request 2 (history of 6 messages) is the first to clear: turn 1's thinking.
    assert s.records[2].cached == tokens("s" * 400) + MESSAGE_OVERHEAD + whole("u" * 400)
    # Request 3 clears turn 2's thinking too: the cache breaks again at message 4.
    r3 = s.records[3]
    step = [i for i in explain(s, 3) if i.index is not None and i.index < 4]
    assert r3.cached == sum(i.tokens for i in step)


def test_keep_must_be_at_least_one():
    with pytest.raises(ValueError, match="at least 1"):
        ClearThinkingParams(keep=0)
    with pytest.raises(ValueError, match="at least 1"):
        make_params(AnthropicEditingParams, {"keep_thinking": "0"})
    assert make_params(ClearThinkingParams, {"keep": "3", "keep_all": "true"}) == (
        ClearThinkingParams(3, True)
    )


# ---- both edits, thinking first --------------------------------------------------


def editing_run() -> Run:
    """Two turns: the first reads two 40,000-character results after thinking, the
    second reads one more."""
    return Run(
        "e",
        (
            SYSTEM,
            user(400),
            think_call(40_000, "a"),
            result("a", 40_000),
            think_call(400, "b"),
            result("b", 40_000),
            think(400),
            user(400),
            think_call(400, "c"),
            result("c", 40_000),
        ),
    )


def test_the_tool_trigger_is_counted_after_the_thinking_is_cleared():
    run = editing_run()
    full = sim(run, "none").records[-1].sent
    thought = tokens("t" * 40_000) + 2 * tokens("t" * 400)
    # A trigger between the request after thinking clearing and the full request.
    trigger = full - thought + 1
    both = sim(run, "anthropic_context_editing", AnthropicEditingParams(trigger=trigger, keep=1))
    alone = sim(run, "anthropic_clear_tool_uses", AnthropicClearParams(trigger=trigger, keep=1))
    assert both.records[-1].plan.clear_before == 0
    assert both.records[-1].sent == full - thought
    assert alone.records[-1].plan.clear_before > 0


def test_both_edits_clear_thinking_and_old_results():
    run = editing_run()
    s = sim(run, "anthropic_context_editing", AnthropicEditingParams(trigger=20_000, keep=1))
    last = s.records[-1]
    assert s.dispositions(last.step) == "kkccccckkk"
    note = tokens("[Tool result cleared]") + MESSAGE_OVERHEAD
    results = 2 * (whole("r" * 40_000) - note)
    thought = tokens("t" * 40_000) + 2 * tokens("t" * 400)
    assert last.sent == sim(run, "none").records[-1].sent - results - thought


def test_keeping_all_thinking_is_tool_use_clearing_alone():
    run = editing_run()
    params = AnthropicEditingParams(keep_all_thinking=True, trigger=50_000, keep=1)
    both = sim(run, "anthropic_context_editing", params)
    alone = sim(run, "anthropic_clear_tool_uses", params.tools())
    assert [(r.sent, r.cached, r.plan.clear_before) for r in both.records] == [
        (r.sent, r.cached, r.plan.clear_before) for r in alone.records
    ]


# ---- compact_20260112 --------------------------------------------------------------


def long_run(n: int = 6) -> Run:
    """A task, then `n` rounds each reading 100,000 characters (25,004 tokens)."""
    messages = [SYSTEM, user(400)]
    for k in range(n):
        messages += [Message("assistant", (ToolCallPart(f"c{k}", "read", "{}"),))]
        messages += [result(f"c{k}", 100_000)]
    messages.append(Message("assistant", (TextPart("done"),)))
    return Run("long", tuple(messages))


def test_nothing_is_compacted_until_the_trigger_is_exceeded():
    run = long_run()
    s = sim(run, "anthropic_compaction")
    none = sim(run, "none")
    first = next(k for k, r in enumerate(none.records) if r.sent > 150_000)
    for k in range(first):
        assert s.records[k].sent == none.records[k].sent
        assert s.records[k].stage == "none"
    assert s.records[first].stage == "summarize"


def test_compaction_sends_the_system_prompt_and_the_summary_then_what_follows():
    run = long_run()
    params = AnthropicCompactionParams(trigger=50_000, summary_tokens=2_000)
    s = sim(run, "anthropic_compaction", params)
    none = sim(run, "none")
    system = tokens("s" * 400) + MESSAGE_OVERHEAD
    k = next(k for k, r in enumerate(none.records) if r.sent > 50_000)
    assert s.records[k].sent == system + 2_000
    assert s.dispositions(k) == "k" + "s" * (s.records[k].end - 1)
    # The next request: the summary, the response that carried it and the new result.
    end = s.records[k].end
    following = sum(whole(*_texts(m)) for m in run.messages[end : s.records[k + 1].end])
    assert s.records[k + 1].sent == system + 2_000 + following


def _texts(message: Message) -> list[str]:
    out = []
    for p in message.parts:
        if isinstance(p, ToolCallPart):
            out.append(p.name + p.arguments)
        else:
            out.append(p.text)  # type: ignore[union-attr]
    return out


def test_each_new_compaction_replaces_the_one_before():
    run = long_run(12)
    s = sim(run, "anthropic_compaction", AnthropicCompactionParams(trigger=50_000))
    boundaries = [r.plan.gap_end for r in s.records if r.plan.gap_end]
    assert len(set(boundaries)) > 1
    assert boundaries == sorted(boundaries)
    assert all(r.plan.gap_start == 1 for r in s.records if r.plan.gap_end)


def test_the_trigger_is_compared_with_the_providers_count():
    run = long_run()
    plain = sim(run, "anthropic_compaction")
    reconciled = sim(run, "anthropic_compaction", reconcile=Reconciliation(1.0, 60_000))
    first = next(k for k, r in enumerate(plain.records) if r.stage == "summarize")
    early = next(k for k, r in enumerate(reconciled.records) if r.stage == "summarize")
    assert early < first


def test_a_request_over_the_hard_limit_is_refused_not_compacted():
    run = long_run(2)
    params = AnthropicCompactionParams(trigger=50_000)
    s = sim(run, "anthropic_compaction", params, budget=40_000, hard_limit=40_000)
    assert all(r.stage == "none" for r in s.records)
    assert s.records[-1].rejected


def test_a_pause_sends_the_preserved_messages_and_never_splits_a_call():
    run = long_run()
    params = AnthropicCompactionParams(
        trigger=50_000, pause_after_compaction=True, preserve_messages=1
    )
    s = sim(run, "anthropic_compaction", params)
    k = next(k for k, r in enumerate(s.records) if r.stage == "summarize")
    r = s.records[k]
    # The newest message is a result: its call is sent again with it.
    assert r.plan.gap_end == r.end - 2
    assert s.dispositions(k)[-2:] == "kk"


def test_the_trigger_has_the_apis_minimum_and_preserving_needs_a_pause():
    with pytest.raises(ValueError, match="50,000"):
        AnthropicCompactionParams(trigger=49_999)
    with pytest.raises(ValueError, match="pause_after_compaction"):
        make_params(AnthropicCompactionParams, {"preserve_messages": "2"})
    assert make_params(AnthropicCompactionParams, {"instructions": "Keep code"}).instructions == (
        "Keep code"
    )


# ---- invariants over random histories with thinking --------------------------------


@st.composite
def thinking_histories(draw: st.DrawFn) -> Run:
    """histories() with thinking in some assistant messages."""
    run = draw(histories(max_rounds=15))
    messages = []
    for m in run.messages:
        if m.role == "assistant" and draw(st.integers(0, 3)):
            size = draw(st.sampled_from((40, 4_000, 80_000)))
            m = replace(m, parts=(ThinkingPart("t" * size), *m.parts))
        messages.append(m)
    return replace(run, messages=tuple(messages))


def expected_thinking_sent(sk, end: int, keep: int) -> int:
    """A request under clear_thinking, message by message: turns found afresh."""
    turn, turns = 0, []
    for i in range(end):
        turn += sk.user_turn[i]
        turns.append(turn)
    with_thinking = sorted({turns[i] for i in range(end) if sk.thinking_tokens[i]})
    kept = set(with_thinking[-keep:])
    return sum(
        t - (th if turns[i] not in kept else 0)
        for i, (t, th) in enumerate(zip(sk.tokens[:end], sk.thinking_tokens[:end], strict=True))
    )


@settings(max_examples=60, deadline=None)
@given(thinking_histories(), st.integers(1, 3))
def test_clear_thinking_sends_the_thinking_of_the_newest_turns_only(run, keep):
    sk = build(run, EST)
    s = simulate(
        sk,
        POLICIES["anthropic_clear_thinking"],
        ClearThinkingParams(keep=keep),
        budget=10**8,
        hard_limit=10**8,
        count=EST.count,
    )
    for r in s.records:
        assert r.sent == expected_thinking_sent(sk, r.end, keep)


def sent_items(s, step: int) -> list[tuple[int | None, str, bool, bool, int]]:
    """explain(s, step) as (index, disposition, body cleared, thinking cleared, tokens).

    The letter does not tell a message's edits apart: "c" is its body cleared, its
    thinking cleared or both (Plan). Nor do its tokens always: clearing the inputs of
    calls whose arguments are "{}" (as in histories()) saves nothing. Yet either edit
    changes the request at that message, where the prompt cache breaks."""
    acct, plan = s.accountant, s.records[step].plan
    out = []
    for i in explain(s, step):
        edited = i.index is not None and i.disposition == "c"
        body = edited and i.index < plan.clear_before and acct.clearable[i.index]
        thinks = acct.thinks  # empty when no message has clearable thinking
        thought = edited and i.index < plan.thinking_before and bool(thinks) and thinks[i.index]
        out.append((i.index, i.disposition, body, thought, i.tokens))
    return out


@settings(max_examples=60, deadline=None)
@given(
    thinking_histories(),
    st.sampled_from(("anthropic_clear_thinking", "anthropic_context_editing")),
    st.integers(50_000, 400_000),
)
def test_prefix_sums_equal_the_expanded_request_with_thinking(run, policy, trigger):
    sk = build(run, EST)
    params = POLICIES[policy].Params()
    if policy == "anthropic_context_editing":
        params = AnthropicEditingParams(trigger=trigger, keep=1, clear_tool_inputs=True)
    s = simulate(sk, POLICIES[policy], params, budget=10**8, hard_limit=10**8, count=EST.count)
    previous = None
    for r in s.records:
        items = sent_items(s, r.step)
        assert r.sent == sum(t for *_, t in items)
        parts = s.composition(r.step)
        assert parts["kept"] + parts["cleared"] + parts["notes"] == r.sent
        assert sum(s.kept_by_kind(r.step)) == parts["kept"]
        assert r.full - parts["removed_cleared"] == r.sent - parts["notes"]
        cleared, *_ = s.counts(r.step)
        assert cleared == sum(d == "c" for _, d, *_ in items)
        if previous is not None:
            common = 0
            for a, b in zip(previous, items, strict=False):
                if a != b:
                    break
                common += b[-1]
            assert r.cached == common
        previous = items


@settings(max_examples=60, deadline=None)
@given(thinking_histories(), st.integers(50_000, 300_000))
def test_compaction_never_sends_a_request_over_its_trigger(run, trigger):
    # The head (a system prompt of at most 4,000 characters) and the summary are far
    # below any trigger the API accepts; nothing is over the hard limit.
    sk = build(run, EST)
    params = AnthropicCompactionParams(trigger=trigger)
    s = simulate(
        sk,
        POLICIES["anthropic_compaction"],
        params,
        budget=10**8,
        hard_limit=10**8,
        count=EST.count,
    )
    boundary = 0
    for r in s.records:
        assert r.sent <= trigger
        assert r.plan.gap_end >= boundary
        boundary = r.plan.gap_end


@settings(max_examples=60, deadline=None)
@given(thinking_histories(), st.integers(50_000, 300_000), st.integers(1, 4))
def test_preserved_messages_never_separate_a_call_from_its_results(run, trigger, kept):
    sk = build(run, EST)
    params = AnthropicCompactionParams(
        trigger=trigger, pause_after_compaction=True, preserve_messages=kept
    )
    s = simulate(
        sk,
        POLICIES["anthropic_compaction"],
        params,
        budget=10**8,
        hard_limit=10**8,
        count=EST.count,
    )
    for r in s.records:
        letters = s.dispositions(r.step)
        for i in range(r.end):
            call = sk.answers[i]
            if call >= 0:
                assert (letters[i] == "s") == (letters[call] == "s")
