"""The benchmark generator: deterministic and shaped as bench/synthetic.py says.

Not a timing test (timings are the benchmark's job): only what the runs contain.
"""

from __future__ import annotations

import pytest

from bench.synthetic import (
    HUGE_TOKENS,
    READ_TOKENS,
    SMALL_TOKENS,
    Spec,
    generate,
    long_run,
    mixed_script_text,
)
from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.model import Run, request_count, steps, tool_rounds, user_turns

STEPS = 1_000


@pytest.fixture(scope="module")
def run() -> Run:
    return long_run(STEPS)


def result_sizes(run: Run) -> list[int]:
    """chars4 tokens of every tool result's text."""
    count = ESTIMATORS["chars4"].count
    return [count(r.text) for m in run.messages for r in m.tool_results]


def test_same_seed_same_run_other_seed_other_run(run: Run) -> None:
    assert long_run(STEPS) == run
    assert generate(Spec(STEPS, seed=7)) == run
    assert long_run(STEPS, seed=8) != run


def test_exactly_the_requested_steps_ending_with_an_answer(run: Run) -> None:
    assert request_count(run) == STEPS
    assert len(steps(run)) == STEPS
    assert all(s.response is not None for s in steps(run))
    last = run.messages[-1]
    assert last.role == "assistant" and not last.tool_calls
    assert len(steps(long_run(1))) == 1


def test_system_prompt_first_then_user_turns_every_150_steps_or_so(run: Run) -> None:
    assert run.messages[0].role == "system"
    assert run.messages[1].is_user_turn
    turns = user_turns(run)
    assert STEPS / 200 <= len(turns) <= STEPS / 100 + 1
    for turn in turns:
        requests = sum(1 for m in run.messages[turn.start : turn.end] if m.role == "assistant")
        assert 1 <= requests <= 200
        # Each turn ends with the model's plain answer.
        assert run.messages[turn.end - 1].role == "assistant"
        assert not run.messages[turn.end - 1].tool_calls


def test_every_call_answered_sometimes_in_parallel(run: Run) -> None:
    rounds = tool_rounds(run)
    assert rounds and all(r.complete for r in rounds)
    widths = [len(run.messages[r.call].tool_calls) for r in rounds]
    assert max(widths) <= 4
    parallel = sum(1 for w in widths if w > 1)
    assert 0.05 * len(rounds) <= parallel <= 0.25 * len(rounds)
    ids = [c.id for m in run.messages for c in m.tool_calls]
    assert len(ids) == len(set(ids))


def test_results_mostly_small_some_file_reads_a_few_huge(run: Run) -> None:
    sizes = result_sizes(run)
    small = [s for s in sizes if s <= SMALL_TOKENS[1]]
    reads = [s for s in sizes if READ_TOKENS[0] <= s <= READ_TOKENS[1]]
    huge = [s for s in sizes if s >= HUGE_TOKENS[0]]
    assert len(small) >= 0.9 * len(sizes)
    assert 0.01 * len(sizes) <= len(reads) <= 0.06 * len(sizes)
    assert 1 <= len(huge) <= 5
    assert max(sizes) <= HUGE_TOKENS[1] + 1


def test_the_skeleton_builds_and_the_run_exceeds_the_budget(run: Run) -> None:
    sk = build(run, ESTIMATORS["chars4"])
    assert sk.steps == STEPS
    assert sum(sk.tokens) > 1_000_000  # so policies have to cut, and none is rejected


def test_mixed_script_text_is_deterministic_and_mixes_scripts() -> None:
    text = mixed_script_text(50_000)
    assert text == mixed_script_text(50_000)
    assert text != mixed_script_text(50_000, seed=8)
    assert 50_000 <= len(text) < 60_000
    assert any("a" <= c <= "z" for c in text)
    assert any("\u0400" <= c <= "\u04ff" for c in text)  # Cyrillic
    assert any("\u4e00" <= c <= "\u9fff" for c in text)  # Han
    assert any(ord(c) >= 0x1F300 for c in text)  # emoji
    assert "{" in text and ";" in text  # code
