"""What every policy that clears tool results in place promises (contextsim.engine.clearing):
registered with its source, and request k depends only on the messages before it."""

from __future__ import annotations

import pytest

from contextsim.counting.builder import build
from contextsim.engine.simulate import simulate
from contextsim.model import Run
from contextsim.registry import POLICIES
from tests.engine.hand_made import (
    EST,
    rounds,
    user,
)

EDITING = ("anthropic_clear_tool_uses", "langchain_clear_tool_uses", "langchain_trim")


def test_the_editing_policies_are_registered_with_their_sources() -> None:
    for name in EDITING:
        policy = POLICIES[name]
        assert policy.name == name and policy.source and policy.label.startswith(name)


@pytest.mark.parametrize("name", EDITING)
def test_a_request_depends_only_on_the_messages_before_it(name: str) -> None:
    messages = [*rounds(8), user("more"), *rounds(4, chars=9_000)]
    whole = Run("r", (user(), *messages))
    cut = Run("r", whole.messages[:14])
    params = {"trigger": 6_000} if "clear" in name else {}
    plans = []
    for run in (whole, cut):
        sk = build(run, EST)
        chosen = POLICIES[name].Params(**params)
        sim = simulate(sk, POLICIES[name], chosen, budget=8_000, hard_limit=10**6, count=EST.count)
        plans.append([r.plan for r in sim.records])
    shared = len(plans[1]) - 1  # the cut run's last request is its pending one
    assert plans[0][:shared] == plans[1][:shared]
    assert any(p.stage != "none" for p in plans[0])
