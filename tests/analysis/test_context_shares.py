"""Where a run's context went over all its requests: exact on a run built for it, the
parts adding up to what was sent under every policy (and reconciled), and on real
Claude Code sessions each tool's share over the run agrees with the tool table's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.analysis.context_shares import UNLOGGED, ContextShares, context_shares
from contextsim.analysis.tool_usage import tool_breakdown
from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import reconciliation, simulate
from contextsim.ingest.detect import parse_path
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart
from contextsim.registry import POLICIES
from contextsim.truth.costs import PRESETS
from tests.conftest import corpus_files

EST = ESTIMATORS["chars4"]
PRICES = PRESETS["anthropic"]


def shares_of(run: Run, policy: str = "none", budget: int = 10**6, rec: bool = False):
    sk = build(run, EST)
    chosen = POLICIES[policy]
    sim = simulate(
        sk,
        chosen,
        chosen.Params(),
        budget=budget,
        hard_limit=10**7,
        count=EST.count,
        reconcile=reconciliation(sk) if rec else None,
    )
    return sim, context_shares(sim, tool_breakdown(sim, PRICES))


def test_a_message_is_paid_for_at_every_request_that_resends_it():
    user = Message("user", (TextPart("u" * 400),))  # 100 chars4 tokens
    call = Message("assistant", (ToolCallPart("c1", "mcp__gh__read", "{}"),))
    result = Message("tool", (ToolResultPart("c1", "r" * 800),))  # 200 tokens
    answer = Message("assistant", (TextPart("a" * 40),))
    sim, shares = shares_of(Run("t", (user, call, result, answer)))
    # Request 0 sends the user message; request 1 sends it again with the call and result.
    user_tokens = EST.count("u" * 400)
    assert shares.requests == 2
    assert shares.parts["user"] >= 2 * user_tokens
    assert shares.parts["tool_result"] >= EST.count("r" * 800)
    assert shares.sent == sum(r.sent for r in sim.records)
    assert sum(shares.parts.values()) == shares.sent
    assert set(shares.tools) == {"mcp__gh__read"}
    assert shares.servers == {"gh": shares.tools["mcp__gh__read"]}


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 3_000), min_size=1, max_size=25),
    policy=st.sampled_from(
        [
            "none",
            "anthropic_clear_tool_uses",
            "claude_code_auto_compact",
            "openai_truncation_auto",
            "swe_agent_last_n",
            "openhands_observation_masking",
        ]
    ),
    budget=st.integers(300, 5_000),
)
def test_the_parts_add_up_to_what_was_sent(sizes, policy, budget):
    messages: list[Message] = [Message("user", (TextPart("go"),))]
    for n, size in enumerate(sizes):
        messages.append(Message("assistant", (ToolCallPart(f"c{n}", f"t{n % 3}", "{}"),)))
        messages.append(Message("tool", (ToolResultPart(f"c{n}", "x" * size),)))
    messages.append(Message("assistant", (TextPart("done"),)))
    _, shares = shares_of(Run("t", tuple(messages)), policy, budget)
    assert sum(shares.parts.values()) == shares.sent
    assert ContextShares.from_dict(shares.to_dict()) == shares


@pytest.mark.parametrize("path", corpus_files("claude_code", "*.jsonl"))
def test_real_sessions_reconciled_add_up_and_agree_with_the_tool_table(path):
    runs = [r for r in parse_path(str(path)).runs if any(m.usage for m in r.messages)]
    if not runs:
        pytest.skip(f"{path.name}: no run with measured usage")
    for run in runs[:3]:
        sk = build(run, EST)
        rec = reconciliation(sk)
        chosen = POLICIES["as_logged"]
        sim = simulate(
            sk, chosen, None, budget=10**7, hard_limit=10**7, count=EST.count, reconcile=rec
        )
        tools = tool_breakdown(sim, PRICES)
        shares = context_shares(sim, tools)
        assert shares.requests == len(sim.records)
        total = sum(shares.parts.values())
        if rec is None:
            assert total == shares.sent
        else:
            # Where the fitted overhead is negative a request sends less than its parts
            # scaled; each part also rounds once.
            short = sum(max(round(rec.scale * r.estimated) - r.sent, 0) for r in sim.records)
            assert abs(total - shares.sent - short) <= len(shares.parts) + 1
        assert shares.reconciled is (rec is not None)
        assert (UNLOGGED in shares.parts) <= (rec is not None)
        for t in tools:
            if t.run_tokens:
                assert shares.tools[t.name] == t.run_tokens


def test_what_a_policy_puts_in_place_of_results_is_its_own_part():
    messages: list[Message] = [Message("user", (TextPart("go"),))]
    for n in range(30):
        messages.append(Message("assistant", (ToolCallPart(f"c{n}", "t", "{}"),)))
        messages.append(Message("tool", (ToolResultPart(f"c{n}", "x" * 4000),)))
    messages.append(Message("assistant", (TextPart("done"),)))
    run = Run("t", tuple(messages))
    _, whole = shares_of(run, "none")
    _, masked = shares_of(run, "swe_agent_last_n")
    assert "cleared" not in whole.parts
    assert masked.parts["cleared"] > 0
    assert masked.parts["tool_result"] < whole.parts["tool_result"]
    assert masked.parts["user"] == whole.parts["user"]
    assert sum(masked.parts.values()) == masked.sent < whole.sent
