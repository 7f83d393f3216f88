"""`anthropic_clear_tool_uses` rule by rule, the editing policies' parameters, and what
every editing policy promises (request k depends only on the messages before it)."""

from __future__ import annotations

from typing import Any

import pytest

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.engine.policy import make_params
from contextsim.engine.simulate import Simulation, simulate
from contextsim.model import Message, Run, ToolResultPart
from contextsim.registry import POLICIES
from contextsim.systems.anthropic_api.policies import ANTHROPIC_PLACEHOLDER, AnthropicClearParams
from tests.engine.hand_made import call, result, rounds, run_of

EST = ESTIMATORS["chars4"]


def anthropic(run: Run, **params: Any) -> Simulation:
    sk = build(run, EST)
    chosen = AnthropicClearParams(**params)
    return simulate(
        sk,
        POLICIES["anthropic_clear_tool_uses"],
        chosen,
        budget=10**7,
        hard_limit=10**8,
        count=EST.count,
    )


def last(sim: Simulation) -> str:
    """Dispositions of the last request (its history is the whole run but the answer)."""
    return sim.dispositions(len(sim.records) - 1)


def cleared(sim: Simulation, step: int | None = None) -> list[int]:
    step = len(sim.records) - 1 if step is None else step
    return [i for i, d in enumerate(sim.dispositions(step)) if d == "c"]


# --- trigger ----------------------------------------------------------------------------


def test_nothing_is_cleared_until_the_request_exceeds_the_trigger() -> None:
    run = run_of(*rounds(6))
    full = build(run, EST).tokens
    total = sum(full[:-1])
    assert cleared(anthropic(run, trigger=total)) == []  # at the trigger: not above it
    sim = anthropic(run, trigger=total - 1)
    # Six results at 2, 4, ..., 12; the newest three (8, 10, 12) are kept.
    assert cleared(sim) == [2, 4, 6]
    assert sim.records[-1].stage == "clear"


def test_the_default_trigger_is_100000_input_tokens() -> None:
    small = run_of(*rounds(20, chars=16_000))  # ~80,000 tokens
    large = run_of(*rounds(30, chars=16_000))  # ~120,000 tokens
    assert cleared(anthropic(small)) == []
    assert len(cleared(anthropic(large))) == 27


def test_a_cleared_result_costs_one_placeholder_and_the_request_shrinks() -> None:
    run = run_of(*rounds(5))
    sim = anthropic(run, trigger=0)
    note = MESSAGE_OVERHEAD + EST.count(ANTHROPIC_PLACEHOLDER)
    saved = 2 * (build(run, EST).tokens[2] - note)
    assert sim.records[-1].sent == sim.records[-1].full - saved


def test_each_request_is_edited_afresh_from_its_own_history() -> None:
    run = run_of(*rounds(6))
    sim = anthropic(run, trigger=0)
    # Request 4 (history up to message 9) has results 2, 4, 6, 8: only 2 is older than
    # the newest three.
    assert sim.records[4].end == 9
    assert cleared(sim, 4) == [2]


# --- keep ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("keep", "expected"), [(0, [2, 4, 6, 8]), (1, [2, 4, 6]), (5, [])])
def test_keep_is_the_number_of_newest_tool_uses_left_whole(keep: int, expected: list[int]) -> None:
    sim = anthropic(run_of(*rounds(4)), trigger=0, keep=keep)
    assert cleared(sim) == expected


def test_parallel_results_in_one_message_are_kept_whole_when_one_of_them_is_kept() -> None:
    both = Message("user", (ToolResultPart("a", "x" * 4_000), ToolResultPart("b", "y" * 4_000)))
    run = run_of(call("a", "b"), both, *rounds(2))
    # Tool uses: a, b (message 2), c0 (4), c1 (6). keep=2 keeps c0 and c1: message 2 goes.
    assert cleared(anthropic(run, trigger=0, keep=2)) == [2]
    # keep=3 keeps b too, so message 2 (holding a and b) stays whole.
    assert cleared(anthropic(run, trigger=0, keep=3)) == []


# --- clear_at_least -------------------------------------------------------------------


def test_clear_at_least_is_all_or_nothing() -> None:
    run = run_of(*rounds(6))
    everything = anthropic(run, trigger=0)
    freed = everything.records[-1].full - everything.records[-1].sent
    assert cleared(anthropic(run, trigger=0, clear_at_least=freed)) == [2, 4, 6]
    fewer = anthropic(run, trigger=0, clear_at_least=freed + 1)
    assert cleared(fewer) == []
    assert fewer.records[-1].sent == fewer.records[-1].full
    assert fewer.records[-1].stage == "none"


def test_clear_at_least_none_or_zero_means_no_minimum() -> None:
    run = run_of(*rounds(5))
    assert cleared(anthropic(run, trigger=0, clear_at_least=None)) == [2, 4]
    assert cleared(anthropic(run, trigger=0, clear_at_least=0)) == [2, 4]


# --- exclude_tools -----------------------------------------------------------------------


def test_excluded_tools_are_never_cleared_but_count_as_tool_uses() -> None:
    run = run_of(
        *rounds(1, tool="memory"),  # 1, 2
        call("r1"),
        result("r1"),  # 3, 4
        call("m2", tool="memory"),
        result("m2"),  # 5, 6
        *[m for n in range(3) for m in (call(f"k{n}"), result(f"k{n}"))],  # 7..12
    )
    sim = anthropic(run, trigger=0, exclude_tools=("memory", "grep"))
    assert cleared(sim) == [4]
    assert last(sim)[2] == "k" and last(sim)[6] == "k"


# --- clear_tool_inputs --------------------------------------------------------------------


def test_clear_tool_inputs_clears_the_calls_of_cleared_results() -> None:
    arguments = '{"path": "' + "p" * 400 + '"}'
    messages = [m for n in range(5) for m in (call(f"c{n}", arguments=arguments), result(f"c{n}"))]
    run = run_of(*messages)
    plain = anthropic(run, trigger=0)
    inputs = anthropic(run, trigger=0, clear_tool_inputs=True)
    assert cleared(plain) == [2, 4]
    assert cleared(inputs) == [1, 2, 3, 4]  # calls 1 and 3 lose their arguments
    per_call = EST.count(arguments) - EST.count("{}")
    assert plain.records[-1].sent - inputs.records[-1].sent == 2 * per_call


def test_clear_tool_inputs_leaves_calls_of_excluded_or_kept_results_alone() -> None:
    run = run_of(
        call("m", tool="memory"),
        result("m"),  # 1, 2: excluded
        *rounds(4),  # 3..10: c0 at 3, 4 cleared; c1..c3 kept
    )
    sim = anthropic(run, trigger=0, clear_tool_inputs=True, exclude_tools=("memory",))
    assert cleared(sim) == [3, 4]


def test_clear_at_least_counts_cleared_inputs_too() -> None:
    arguments = '{"path": "' + "p" * 4_000 + '"}'
    messages = [m for n in range(4) for m in (call(f"c{n}", arguments=arguments), result(f"c{n}"))]
    run = run_of(*messages)
    results_only = anthropic(run, trigger=0)
    freed = results_only.records[-1].full - results_only.records[-1].sent
    assert cleared(anthropic(run, trigger=0, clear_at_least=freed + 1)) == []
    with_inputs = anthropic(run, trigger=0, clear_at_least=freed + 1, clear_tool_inputs=True)
    assert cleared(with_inputs) == [1, 2]


# --- parameters ---------------------------------------------------------------------------


def test_anthropic_parameters_parse_from_text() -> None:
    params = make_params(
        AnthropicClearParams,
        {
            "trigger": "50000",
            "keep": "2",
            "clear_at_least": "5000",
            "exclude_tools": "memory, web_search",
            "clear_tool_inputs": "true",
        },
    )
    assert params == AnthropicClearParams(50_000, 2, 5_000, ("memory", "web_search"), True)
    assert make_params(AnthropicClearParams, {"clear_at_least": "none"}).clear_at_least is None
    assert AnthropicClearParams() == AnthropicClearParams(100_000, 3, None, (), False)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"keep": "three"}, "keep: expected int"),
        ({"trigger": "-1"}, "trigger: expected a value >= 0"),
        ({"clear_tool_inputs": "maybe"}, "clear_tool_inputs: expected true or false"),
        ({"clear_at_leest": "1"}, "unknown parameter clear_at_leest"),
    ],
)
def test_bad_anthropic_parameters_name_the_key(values: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_params(AnthropicClearParams, values)


# --- every editing policy -----------------------------------------------------------------
