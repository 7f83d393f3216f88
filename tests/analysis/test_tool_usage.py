"""Each tool's part of what a run sends: exact on small runs built for it, consistent
between one request and the whole run, and on real Claude Code sessions, each tool's
share of the results matches the log's own text (characters per tool, read here from
the raw JSONL)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.analysis.tool_usage import (
    BUILT_IN,
    by_server,
    mcp_server,
    tool_breakdown,
)
from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.counting.skeleton import KIND_INDEX
from contextsim.engine.simulate import simulate
from contextsim.ingest.detect import parse_path
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart
from contextsim.registry import POLICIES
from contextsim.truth.costs import PRESETS
from tests.conftest import corpus_files, log_entries

EST = ESTIMATORS["chars4"]
PRICES = PRESETS["anthropic"]


def calls(*spec: tuple[str, int]) -> list[Message]:
    """A call and its result per (tool, result characters)."""
    out = []
    for n, (tool, size) in enumerate(spec):
        out.append(Message("assistant", (ToolCallPart(f"c{n}", tool, f'{{"n": {n}}}'),)))
        out.append(Message("tool", (ToolResultPart(f"c{n}", "x" * size),)))
    return out


def simulated(run: Run, policy: str = "none", budget: int = 10**6, **params):
    sk = build(run, EST)
    chosen = POLICIES[policy]
    return simulate(
        sk,
        chosen,
        chosen.Params(**params),
        budget=budget,
        hard_limit=budget,
        count=EST.count,
    )


@pytest.mark.parametrize(
    ("name", "server"),
    [
        ("mcp__github__create_issue", "github"),
        ("mcp__claude_ai_Google_Drive__authenticate", "claude_ai_Google_Drive"),
        ("mcp__plugin_x__tool__with__underscores", "plugin_x"),
        ("Read", BUILT_IN),
        ("mcp__noserver", BUILT_IN),
    ],
)
def test_mcp_server_of_a_tool_name(name, server):
    assert mcp_server(name) == server


def test_each_result_counts_at_every_request_that_sends_it():
    run = Run(
        "r", (Message("user", (TextPart("go"),)), *calls(("Read", 4000), ("mcp__gh__pr", 800)))
    )
    sim = simulated(run)
    sk = sim.skeleton
    read, gh = 2, 4  # the results' message indexes
    # The Read result is sent by the request after it and the one after that (3 requests).
    later = [k for k, end in enumerate(sk.ends) if end > read]
    shares = {t.name: t for t in tool_breakdown(sim, PRICES, calls=False)}
    assert shares["Read"].run_tokens == sk.tokens[read] * len(later)
    assert shares["mcp__gh__pr"].run_tokens == sk.tokens[gh] * sum(e > gh for e in sk.ends)
    assert shares["mcp__gh__pr"].server == "gh" and shares["Read"].server == BUILT_IN
    assert [s.name for s in by_server(list(shares.values()))] == [BUILT_IN, "gh"]


def test_a_cleared_result_counts_as_its_notes():
    run = Run("r", (Message("user", (TextPart("go"),)), *calls(*[("Read", 6000)] * 8)))
    kept = {t.name: t for t in tool_breakdown(simulated(run, "none"), PRICES, calls=False)}
    cleared = simulated(run, "anthropic_clear_tool_uses", trigger=4_000, keep=1)
    shares = {t.name: t for t in tool_breakdown(cleared, PRICES, calls=False)}
    assert shares["Read"].run_tokens < kept["Read"].run_tokens
    last = len(cleared.records) - 1
    at_last = tool_breakdown(cleared, PRICES, last, calls=False)[0].step_tokens
    assert (
        at_last
        == cleared.kept_by_kind(last)[KIND_INDEX["tool_result"]]
        + cleared.composition(last)["cleared"]
    )


@st.composite
def runs(draw):
    tools = ["Read", "Bash", "mcp__a__x", "mcp__b__y"]
    spec = draw(
        st.lists(st.tuples(st.sampled_from(tools), st.integers(0, 3000)), min_size=1, max_size=12)
    )
    return Run("r", (Message("user", (TextPart("go"),)), *calls(*spec)))


@settings(max_examples=40, deadline=None)
@given(runs(), st.sampled_from(["none", "as_logged", "anthropic_clear_tool_uses", "mythex"]))
def test_parts_add_up_and_never_exceed_the_request(run, policy):
    sim = simulated(run, policy, budget=3_000)
    by_step = [tool_breakdown(sim, PRICES, k) for k in range(len(sim.records))]
    for k, shares in enumerate(by_step):
        # Results and arguments are within what the request sends.
        assert sum(t.step_tokens for t in shares) <= sim.records[k].estimated + len(shares)
    run_total = {t.name: t.run_tokens for t in by_step[0]}
    for name, total in run_total.items():
        steps = sum(next(t.step_tokens for t in s if t.name == name) for s in by_step)
        assert abs(steps - total) <= len(by_step)  # rounding per request only


def _result_chars(path) -> Counter[str]:
    """Characters of tool results per tool, read from a Claude Code session's JSONL."""
    names: dict[str, str] = {}
    chars: Counter[str] = Counter()
    for entry in log_entries(path):
        message = entry.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                names[block["id"]] = block["name"]
            elif block.get("type") == "tool_result":
                body = block.get("content")
                text = (
                    body
                    if isinstance(body, str)
                    else "".join(b.get("text", "") for b in body or [] if isinstance(b, dict))
                )
                chars[names.get(block.get("tool_use_id"), "?")] += len(text)
    return chars


@pytest.mark.parametrize(
    "path",
    corpus_files("claude_code", "sentinelpi_*.jsonl")
    + corpus_files("claude_code", "codemie_session-624a*.jsonl")
    + corpus_files("claude_code", "tpuinf_*.jsonl"),
)
def test_tool_shares_follow_the_logs_own_text(path):
    chars = _result_chars(path)
    (run,) = [r for r in parse_path(str(path)).runs if not r.subagent]
    sk = build(run, ESTIMATORS["o200k"])
    sim = simulate(sk, POLICIES["none"], budget=10**7, hard_limit=10**7, count=EST.count)
    last = len(sim.records) - 1
    shares = {t.name: t.step_tokens for t in tool_breakdown(sim, PRICES, last, calls=False)}
    tokens = sum(shares.values())
    total = sum(chars.values())
    top = chars.most_common(1)[0][0]
    assert (
        max(shares, key=lambda n: shares[n]) == top
        or abs(shares[top] / tokens - chars[top] / total) < 0.05
    )
    for name, count in chars.most_common(3):
        assert abs(shares.get(name, 0) / tokens - count / total) < 0.05, name


def test_definitions_are_shared_out_by_tool_and_a_tool_never_called_gets_a_row():
    from contextsim.analysis.tool_usage import DEFINITIONS, ToolShare, split_definitions

    shares = [
        ToolShare(DEFINITIONS, "", 1, 300, 3_000, 0.30),
        ToolShare("Read", BUILT_IN, 2, 50, 500, 0.05, calls=2, arguments=20),
    ]
    rows = {t.name: t for t in split_definitions(shares, {"Read": 100, "mcp__gh__pr": 200})}
    assert DEFINITIONS not in rows
    assert rows["mcp__gh__pr"].definitions == 2_000 and rows["mcp__gh__pr"].server == "gh"
    assert rows["mcp__gh__pr"].run_tokens == 2_000 and rows["mcp__gh__pr"].calls == 0
    assert rows["Read"].definitions == 1_000 and rows["Read"].run_tokens == 1_500
    assert rows["Read"].dollars == pytest.approx(0.05 + 0.10)
    assert rows["Read"].step_tokens == 150
    assert split_definitions(shares, {}) == shares
