"""Compaction events: a log's own, with the trigger and preTokens its compact_boundary
lines state (read here from the raw JSONL) and the measured sizes around it; a
what-if's, where its summarized span grows."""

from __future__ import annotations

import pytest

from contextsim.analysis.compactions import CompactionEvent, Limit, compaction_events
from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import simulate
from contextsim.ingest.detect import parse_path
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart
from contextsim.registry import POLICIES
from tests.conftest import corpus_files, log_entries

EST = ESTIMATORS["chars4"]
WINDOW = Limit(200_000, "the test's")


def _boundaries(path):
    """(trigger, preTokens, context of the first response after it) per compact_boundary."""
    found = []
    waiting = None
    for entry in log_entries(path):
        if entry.get("type") == "system" and entry.get("subtype") == "compact_boundary":
            meta = entry.get("compactMetadata") or {}
            waiting = [meta.get("trigger"), meta.get("preTokens"), None]
            found.append(waiting)
            continue
        message = entry.get("message")
        if waiting is not None and entry.get("type") == "assistant" and isinstance(message, dict):
            usage = message.get("usage")
            if usage and message.get("model") != "<synthetic>" and not entry.get("isSidechain"):
                waiting[2] = (
                    usage.get("input_tokens", 0)
                    + usage.get("cache_read_input_tokens", 0)
                    + usage.get("cache_creation_input_tokens", 0)
                )
                waiting = None
    return [tuple(b) for b in found]


@pytest.mark.parametrize("path", corpus_files("claude_code", "*.jsonl"))
def test_logged_compactions_say_what_the_log_says(path):
    expected = _boundaries(path)
    runs = [r for r in parse_path(str(path)).runs if not r.subagent and not r.compaction_request]
    if not expected:
        pytest.skip(f"{path.name} has no compact_boundary")
    (run,) = runs
    sk = build(run, EST)
    sim = simulate(sk, POLICIES["as_logged"], budget=10**7, hard_limit=10**7, count=EST.count)
    events = compaction_events(sim, Limit(167_000, "a rule"), WINDOW)
    assert [(e.trigger, e.logged_before, e.after) for e in events] == expected
    for e in events:
        assert e.origin == "logged"
        assert f"{e.logged_before:,}" in e.explain()
        if e.trigger == "auto":
            assert "167,000 (a rule)" in e.explain()
        else:  # a manual compaction did not fire at the threshold
            assert "167,000" not in e.explain()


def _long_run(rounds: int) -> Run:
    messages = [Message("user", (TextPart("go"),))]
    for n in range(rounds):
        messages.append(Message("assistant", (ToolCallPart(f"c{n}", "Read", f'{{"n": {n}}}'),)))
        messages.append(Message("tool", (ToolResultPart(f"c{n}", f"{n} " + "x" * 8_000),)))
    return Run("r", tuple(messages), model="claude-sonnet-4-5")


def test_a_what_if_compacts_where_its_summary_grows():
    sk = build(_long_run(120), EST)
    policy = POLICIES["claude_code_auto_compact"]
    sim = simulate(sk, policy, budget=200_000, hard_limit=200_000, count=EST.count)
    events = compaction_events(sim, Limit(167_000, "rule"), WINDOW)
    assert events, "120 results of 2,000 tokens pass a 167k threshold"
    ends = [r.plan.gap_end if r.plan.gap_kind == "s" else 0 for r in sim.records]
    grown = [k for k in range(1, len(ends)) if ends[k] > max(ends[:k])]
    assert [e.step for e in events] == grown
    for e in events:
        assert (e.origin, e.trigger) == ("simulated", "policy")
        assert e.before == sim.records[e.step - 1].sent
        assert e.after == sim.records[e.step].sent
        assert e.after < e.before and e.freed == e.before - e.after


def test_a_what_if_sends_the_full_history_and_has_no_logged_event():
    sk = build(_long_run(5), EST)
    sim = simulate(sk, POLICIES["none"], budget=10**6, hard_limit=10**6, count=EST.count)
    assert compaction_events(sim, None, WINDOW) == []


def test_explain_names_an_unknown_trigger():
    event = CompactionEvent(3, "logged", "", 1_000, 200, None, None, WINDOW)
    text = event.explain()
    assert "does not say what started it" in text and "1,000" in text and "200,000" in text
