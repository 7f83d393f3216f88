"""Claude Code's time-based microcompaction (approximate), on runs with logged times:
rule by rule, and as invariants over random histories given random times."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.counting import skeleton
from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.engine.simulate import Simulation, simulate
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart
from contextsim.registry import POLICIES
from contextsim.systems.claude_code.microcompact import CLEARED, COMPACTABLE, MicrocompactParams
from tests.engine.histories import histories

EST = ESTIMATORS["chars4"]
HOUR = 3_600.0


def timed(tools: list[str], pause_before: dict[int, float] | None = None) -> Run:
    """A system prompt, a task, then one call and result per tool, a minute apart; a
    pause of `pause_before[n]` seconds before the result of call n (as if the person
    came back to answer it); a final answer."""
    pause_before = pause_before or {}
    clock = 1_700_000_000.0
    messages = [
        Message("system", (TextPart("be brief"),), time=clock),
        Message("user", (TextPart("go"),), time=clock),
    ]
    for n, tool in enumerate(tools):
        clock += 60
        messages.append(Message("assistant", (ToolCallPart(f"c{n}", tool, "{}"),), time=clock))
        clock += 60 + pause_before.get(n, 0)
        result = ToolResultPart(f"c{n}", "r" * 4_000)
        messages.append(Message("user", (result,), time=clock))
    messages.append(Message("assistant", (TextPart("done"),), time=clock + 60))
    return Run("r", tuple(messages))


def micro(run: Run, **params: Any) -> Simulation:
    return simulate(
        build(run, EST),
        POLICIES["claude_code_microcompact"],
        MicrocompactParams(**params),
        budget=10**7,
        hard_limit=10**8,
        count=EST.count,
    )


def results(s: Simulation, step: int) -> str:
    letters = s.dispositions(step)
    return "".join(letters[i] for i in range(len(letters)) if s.skeleton.result_count[i])


def step_ending_with_result(s: Simulation, n: int) -> int:
    """The request whose last message is the result of call n."""
    return next(r.step for r in s.records if sum(s.skeleton.result_count[: r.end]) == n + 1)


def test_after_an_idle_hour_all_but_the_newest_five_results_are_cleared():
    s = micro(timed(["Read"] * 9, {8: HOUR}))
    step = step_ending_with_result(s, 8)
    assert results(s, step - 1) == "k" * 8
    assert results(s, step) == "cccc" + "kkkkk"
    assert s.records[step].stage == "clear"


def test_the_cleared_results_cost_the_placeholder():
    s = micro(timed(["Read"] * 9, {8: HOUR}))
    step = step_ending_with_result(s, 8)
    assert s.composition(step)["cleared"] == 4 * (EST.count(CLEARED) + MESSAGE_OVERHEAD)


def test_a_gap_of_exactly_an_hour_clears_nothing():
    s = micro(timed(["Read"] * 9, {8: HOUR - 60}))  # the call's minute makes the hour
    assert "c" not in results(s, len(s.records) - 1)


def test_cleared_results_stay_cleared_and_later_ones_stay_whole_until_the_next_gap():
    s = micro(timed(["Bash"] * 14, {6: HOUR, 12: 2 * HOUR}))
    first = step_ending_with_result(s, 6)
    assert results(s, first) == "cc" + "kkkkk"
    assert results(s, first + 4) == "cc" + "k" * 9  # four results later: no new clearing
    second = step_ending_with_result(s, 12)
    assert results(s, second) == "c" * 8 + "kkkkk"


def test_results_of_other_tools_are_neither_cleared_nor_counted_among_the_five():
    tools = ["Read", "Task", "Read", "TodoWrite", "Read", "Read", "Read", "Read", "Grep"]
    s = micro(timed(tools, {8: HOUR}))
    step = step_ending_with_result(s, 8)
    # The newest five compactable results are the last five; Task and TodoWrite stay.
    assert results(s, step) == "ckckkkkkk"


def test_compactable_tools_empty_means_every_tool():
    s = micro(timed(["Task"] * 7, {6: HOUR}), compactable_tools=())
    assert results(s, step_ending_with_result(s, 6)) == "cc" + "kkkkk"


def test_keep_recent_below_one_still_keeps_the_newest_result():
    s = micro(timed(["Read"] * 4, {3: HOUR}), keep_recent=0)
    assert results(s, step_ending_with_result(s, 3)) == "ccck"


def test_the_gap_is_a_parameter_in_minutes():
    s = micro(timed(["Read"] * 7, {6: 600}), gap_minutes=5)
    assert results(s, step_ending_with_result(s, 6)) == "cc" + "kkkkk"


def test_a_run_without_times_never_microcompacts():
    run = timed(["Read"] * 9, {8: HOUR})
    untimed = replace(run, messages=tuple(replace(m, time=None) for m in run.messages))
    assert build(untimed, EST).times == ()
    s = micro(untimed)
    assert all("c" not in s.dispositions(r.step) for r in s.records)


def test_a_subagent_never_microcompacts():
    s = micro(replace(timed(["Read"] * 9, {8: HOUR}), subagent=True))
    assert all("c" not in s.dispositions(r.step) for r in s.records)


def test_the_skeleton_keeps_each_messages_time_through_storage():
    run = timed(["Read"] * 2)
    sk = build(run, EST)
    assert sk.times == tuple(m.time for m in run.messages)
    assert skeleton.from_dict(skeleton.to_dict(sk)).times == sk.times


def test_the_label_and_docstring_say_approximate_and_give_the_evidence():
    policy = POLICIES["claude_code_microcompact"]
    assert "approximate" in policy.label
    doc = type(policy).__doc__ or ""
    assert "approximate" in doc and "reverse engineering" in doc
    assert "never fires" in doc
    assert MicrocompactParams().compactable_tools == COMPACTABLE


@st.composite
def timed_histories(draw: st.DrawFn) -> Run:
    """A random history (tests.engine.histories) with random times: seconds apart, now
    and then hours, sometimes a message without a time; tools from Claude Code's."""
    run = draw(histories())
    clock = 1_700_000_000.0
    messages = []
    for m in run.messages:
        clock += draw(st.sampled_from((1.0, 30.0, 3_000.0, 4_000.0, 9_000.0)))
        time = None if draw(st.integers(0, 20)) == 0 else clock
        parts = tuple(
            replace(p, name=draw(st.sampled_from(("Read", "Bash", "Task"))))
            if isinstance(p, ToolCallPart)
            else p
            for p in m.parts
        )
        messages.append(replace(m, parts=parts, time=time))
    return replace(run, messages=tuple(messages))


@settings(max_examples=80, deadline=None)
@given(timed_histories(), st.sampled_from((1, 3, 5)))
def test_microcompaction_never_unclears_and_keeps_the_newest_compactable_results(run, keep):
    s = micro(run, keep_recent=keep)
    sk = s.skeleton
    clearable = s.accountant.clearable
    previous = 0
    for r in s.records:
        assert r.plan.clear_before >= previous
        previous = r.plan.clear_before
        letters = s.dispositions(r.step)
        kept = [
            i for i in range(r.end) if sk.result_count[i] and clearable[i] and letters[i] == "k"
        ]
        compactable = sum(sk.result_count[i] for i in range(r.end) if clearable[i])
        assert sum(sk.result_count[i] for i in kept) >= min(keep, compactable)
        for i, letter in enumerate(letters):
            if letter == "c":
                assert set(sk.tool_names[i].split(",")) <= {"Read", "Bash"}


@settings(max_examples=60, deadline=None)
@given(timed_histories(), st.integers(0, 60))
def test_a_timed_request_depends_only_on_the_messages_before_it(run, cut):
    prefix = replace(run, messages=run.messages[: min(cut, len(run.messages))])
    short, whole = micro(prefix), micro(run)
    for a, b in zip(short.records, whole.records, strict=False):
        if a.end < len(prefix.messages):
            assert (a.plan, a.sent) == (b.plan, b.sent)
