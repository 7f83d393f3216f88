"""Claude Code's auto-compact, rule by rule on a small hand-made run."""

from __future__ import annotations

from dataclasses import replace

from contextsim.counting.builder import build
from contextsim.model import Compaction, Run, Usage
from contextsim.systems.claude_code.policies import ClaudeCodeParams, claude_code_threshold
from tests.engine.hand_made import (
    EST,
    rounds,
    sim,
    task,
)


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


def _measured(run: Run, sizes: dict[int, int]) -> Run:
    """`run` with the k-th assistant message measured at sizes[k] tokens."""
    out, k = [], 0
    for m in run.messages:
        if m.role == "assistant":
            if k in sizes:
                m = replace(m, usage=Usage(sizes[k], output_tokens=10))
            k += 1
        out.append(m)
    return replace(run, messages=tuple(out))


def test_a_session_that_starts_above_the_threshold_compacts_once():
    # Resumed: its first request is measured at 180,000, above a 167,000 threshold,
    # and so is every request after (the unlogged part stays): it compacts once.
    run = replace(
        _measured(task(*rounds(8)), {k: 180_000 + k for k in range(9)}),
        context_window=200_000,
        harness_version="2.1.29",
    )
    s = sim("claude_code_auto_compact", run, threshold=167_000)
    boundaries = {r.plan.gap_end for r in s.records if r.plan.stage == "summarize"}
    assert len(boundaries) == 1


def test_the_threshold_an_automatic_compaction_reveals_is_the_runs():
    # The log compacted after a request measured at 120,000 at preTokens 130,000: the
    # threshold lies between, whatever the version's rule says (167,000).
    run = _measured(task(*rounds(6)), {0: 100_000, 1: 110_000, 2: 120_000})
    boundary = next(i for i, m in enumerate(run.messages) if m.role == "tool") + 6
    run = replace(
        run,
        compactions=(Compaction(boundary, 130_000, "auto"),),
        context_window=200_000,
        harness_version="2.1.29",
    )
    sk = build(run, EST)
    threshold, source = claude_code_threshold(sk, ClaudeCodeParams())
    assert 120_000 < threshold <= 130_000 and "revealed" in source
    assert claude_code_threshold(sk, ClaudeCodeParams(threshold=90_000)) == (90_000, "set")
    # Measured sizes decide before the log's compaction: at a threshold of 115,000 it
    # fires at the third request, measured at 120,000, whatever the estimator counts.
    s = sim("claude_code_auto_compact", run, threshold=115_000)
    assert next(r.step for r in s.records if r.plan.stage == "summarize") == 2


def test_a_log_that_went_past_the_threshold_without_compacting_raises_it():
    # 2.1 on 200k: the rule says 167,000, but the session went to 185,603 and never
    # compacted: its threshold was higher, and the policy does not fire where it did not.
    run = replace(
        _measured(task(*rounds(4)), {0: 100_000, 1: 150_000, 2: 185_603, 3: 120_000}),
        context_window=200_000,
        harness_version="2.1.141",
    )
    threshold, source = claude_code_threshold(build(run, EST), ClaudeCodeParams())
    assert threshold == 185_604 and "did not compact" in source
    assert not any(
        r.plan.stage == "summarize" for r in sim("claude_code_auto_compact", run).records
    )
    # A window chosen by hand is a what-if: the rule applies.
    assert claude_code_threshold(build(run, EST), ClaudeCodeParams(window=200_000))[0] == 167_000
