"""The O(1) accounting equals a message-by-message expansion of every request."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.plan import Plan
from contextsim.engine.policy import plain_accounts
from contextsim.engine.simulate import explain, simulate
from contextsim.model import Message, Run, TextPart, ThinkingPart
from contextsim.registry import POLICIES
from tests.engine.histories import histories

EST = ESTIMATORS["chars4"]


def sent_items(sim, step):
    return [
        (i.index, i.kind, i.disposition, i.tokens)
        for i in explain(sim, step)
        if i.disposition not in "ts"
    ]


@settings(max_examples=120, deadline=None)
@given(histories(max_rounds=20), st.integers(3_000, 500_000), st.sampled_from(sorted(POLICIES)))
def test_prefix_sums_equal_the_expanded_request(run, budget, policy):
    sk = build(run, EST)
    sim = simulate(sk, POLICIES[policy], budget=budget, hard_limit=budget * 2, count=EST.count)
    previous = None
    for r in sim.records:
        items = sent_items(sim, r.step)
        assert r.sent == sum(t for *_, t in items)
        parts = sim.composition(r.step)
        assert (
            parts["kept"]
            + parts["cleared"]
            + parts["offloaded"]
            + parts["summary"]
            + parts["notes"]
            == r.sent
        )
        assert sum(sim.kept_by_kind(r.step)) == parts["kept"]
        removed = sum(v for k, v in parts.items() if k.startswith("removed_"))
        assert r.full - removed == r.sent - parts["summary"] - parts["notes"]
        if previous is not None:
            common = 0
            for a, b in zip(previous, items, strict=False):
                if a != b:
                    break
                common += b[3]
            assert r.cached == common, (r.step, r.cached, common)
        previous = items


def test_cost_reads_the_cached_prefix_at_the_cache_price():
    from contextsim.truth.costs import PRESETS, per_token

    new, read, out = per_token(PRESETS["anthropic"])  # a new token is written to the cache
    assert (new * 1e6, read * 1e6) == (pytest.approx(3.0 * 1.25), pytest.approx(3.0 * 0.1))
    new, _, out = per_token(PRESETS["openai"])
    assert new * 1e6 + out * 1e6 == pytest.approx(11.25)


def _two_turns_of_turn_only_thinking() -> Skeleton:
    """Three user turns, two answers each with 500 tokens of turn-only reasoning."""

    def answer() -> Message:
        return Message(
            "assistant", (ThinkingPart("", sent_tokens=500, turn_only=True), TextPart("ok"))
        )

    messages = (
        Message("user", (TextPart("one"),)),
        answer(),
        Message("user", (TextPart("two"),)),
        answer(),
        Message("user", (TextPart("three"),)),
    )
    return build(Run("r", messages), ESTIMATORS["chars4"])


def test_turn_only_thinking_is_sent_until_the_next_user_turn():
    sk = _two_turns_of_turn_only_thinking()
    assert sk.turn_thinking[1] == 500
    _, acct = plain_accounts(sk)
    whole = [sum(sk.tokens[:end]) for end in (2, 4, 5)]
    # Within its turn the reasoning is sent; once the user speaks again, it is not.
    assert acct.sent(Plan(2)) == whole[0]
    assert acct.sent(Plan(4)) == whole[1] - 500
    assert acct.sent(Plan(5)) == whole[2] - 1_000


def test_the_composition_by_kind_adds_up_to_what_is_sent_with_turn_only_thinking():
    _, acct = plain_accounts(_two_turns_of_turn_only_thinking())
    for end in (2, 4, 5):
        plan = Plan(end)
        assert sum(acct.kept_by_kind(plan)) == acct.composition(plan)["kept"] == acct.sent(plan)
