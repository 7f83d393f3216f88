"""The `deepagents` policy on small hand-built runs and on random ones checked against a
plain, step-by-step model of the middleware (the planner must agree while working from
prefix sums in O(log M) per request)."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.counting.offload_stubs import render_tool_stub
from contextsim.engine.policy import Context, make_params
from contextsim.engine.simulate import simulate
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart
from contextsim.registry import POLICIES
from contextsim.systems.langchain.deepagents import (
    EXEMPT_TOOLS,
    DeepAgentsParams,
    DeepAgentsPlanner,
)

EST = ESTIMATORS["chars4"]
TOOL_LIMIT = 4 * 20_000
"""Characters of a tool result at the offload limit (20,000 tokens of 4 characters)."""
HUMAN_LIMIT = 4 * 50_000


def system(chars: int = 40) -> Message:
    return Message("system", (TextPart("s" * chars),))


def user(chars: int = 20) -> Message:
    return Message("user", (TextPart("u" * chars),))


def call(call_id: str, name: str = "fetch") -> Message:
    return Message("assistant", (ToolCallPart(call_id, name, "{}"),))


def result(call_id: str, chars: int) -> Message:
    return Message("tool", (ToolResultPart(call_id, "r" * chars),))


def answer(chars: int = 10) -> Message:
    return Message("assistant", (TextPart("a" * chars),))


def rounds(count: int, chars: int, first: int = 0, name: str = "fetch") -> list[Message]:
    out: list[Message] = []
    for k in range(first, first + count):
        out += [call(f"c{k}", name), result(f"c{k}", chars)]
    return out


def planner(messages: list[Message], **params: object) -> DeepAgentsPlanner:
    sk = build(Run("r", tuple(messages)), EST)
    ctx = Context(sk, budget=10**9, hard_limit=10**9, count=EST.count)
    return DeepAgentsPlanner(ctx, DeepAgentsParams(**params))  # type: ignore[arg-type]


def plans(p: DeepAgentsPlanner) -> list[tuple[int, int, int]]:
    """(end, gap_start, gap_end) of every request, in step order."""
    return [(pl.end, pl.gap_start, pl.gap_end) for pl in map(p.plan, p.sk.ends)]


# --- Parameters and registry -------------------------------------------------------------


def test_defaults_are_the_packages_for_its_default_model():
    p = DeepAgentsParams()
    assert (p.trigger_fraction, p.keep_fraction) == (0.85, 0.10)
    assert (p.fallback_trigger, p.fallback_keep_messages) == (170_000, 6)
    assert (p.tool_token_limit, p.human_token_limit) == (20_000, 50_000)
    assert (p.max_output, p.chars_per_token, p.window) == (128_000, 3.3, None)
    assert EXEMPT_TOOLS == ("ls", "glob", "grep", "read_file", "edit_file", "write_file", "delete")


def test_registered_and_every_parameter_settable_from_text():
    policy = POLICIES["deepagents"]
    assert policy.Params is DeepAgentsParams and "0.7.32" in policy.source
    values = {f.name: str(getattr(DeepAgentsParams(), f.name)) for f in fields(DeepAgentsParams)}
    values["exempt_tools"] = "ls,read_file"
    made = make_params(DeepAgentsParams, values)
    assert made.exempt_tools == ("ls", "read_file") and made.window is None


def test_fractions_outside_zero_to_one_are_refused():
    with pytest.raises(ValueError, match="fraction"):
        planner([user(), answer()], keep_fraction=1.5)


# --- Offloading ------------------------------------------------------------------------


def test_a_tool_result_is_offloaded_only_above_20000_tokens_of_4_characters():
    messages = [user(), *rounds(1, TOOL_LIMIT), *rounds(1, TOOL_LIMIT + 1, first=1), answer()]
    p = planner(messages)
    assert p.statics.offloaded == [False, False, False, False, True, False]
    assert 100 < p.statics.offload_tokens[4] < 500  # the stub, not 20,001 tokens
    assert not any(planner(messages, tool_token_limit=None).statics.offloaded)


@pytest.mark.parametrize("name", EXEMPT_TOOLS)
def test_file_system_tools_are_never_offloaded(name):
    p = planner([user(), *rounds(1, 3 * TOOL_LIMIT, name=name), answer()])
    assert not any(p.statics.offloaded)


def test_exemption_is_by_exact_name_and_configurable():
    messages = [user(), *rounds(1, 3 * TOOL_LIMIT, name="Read"), answer()]
    assert planner(messages).statics.offloaded[2]  # Claude Code's Read is not read_file
    assert not planner(messages, exempt_tools=("Read",)).statics.offloaded[2]


def test_the_last_human_message_is_offloaded_above_50000_tokens():
    big, limit = user(HUMAN_LIMIT + 1), user(HUMAN_LIMIT)
    assert planner([big, answer()]).statics.offloaded == [True, False]
    assert planner([limit, answer()]).statics.offloaded == [False, False]
    # A big message followed by another before any request was never the newest one.
    assert planner([big, user(), answer()]).statics.offloaded == [False, False, False]
    # A pending request counts: its history ends with the big message.
    assert planner([user(), answer(), big]).statics.offloaded == [False, False, True]
    assert not planner([big, answer()], human_token_limit=None).statics.offloaded[0]


def test_offloaded_messages_are_sent_as_stubs_and_the_stage_says_so():
    messages = [user(), *rounds(1, 3 * TOOL_LIMIT), answer()]
    sim = simulate(build(Run("r", tuple(messages)), EST), POLICIES["deepagents"], budget=10**6,
                   hard_limit=10**6, count=EST.count)  # fmt: skip
    last = sim.records[-1]
    assert sim.counts(last.step)[3] == 1 and last.stage == "offload"
    assert last.sent < 1_000 < last.full
    assert sim.records[0].stage == "none"


def test_stub_size_is_the_rendered_stubs():
    text = "\n".join(f"row {k}: " + "v" * (k % 70) for k in range(3_000))
    messages = [user(), call("c1"), Message("tool", (ToolResultPart("c1", text),)), answer()]
    p = planner(messages)
    assert p.statics.offload_tokens[2] == MESSAGE_OVERHEAD + EST.count(render_tool_stub(text, "c1"))


# --- Summarization ---------------------------------------------------------------------


def run_of(count: int, chars: int) -> list[Message]:
    return [system(), user(), *rounds(count, chars), answer()]


def first_summary(p: DeepAgentsPlanner) -> tuple[int, tuple[int, int, int]]:
    """(step, its (end, gap_start, gap_end)) of the first summarized request (runs the
    planner, which carries state: use a fresh one for each call)."""
    return next((k, got) for k, got in enumerate(plans(p)) if got[2])


def test_summarizes_once_the_count_reaches_85_percent_of_the_window():
    p = planner(run_of(100, 400), window=10_000, max_output=0, chars_per_token=4.0)
    k, (end, _, _) = first_summary(p)
    before = p.sk.ends[k - 1]
    assert p.d[end] >= 8_500 > p.d[before]


def test_the_output_reserve_can_trigger_first():
    # 95% of 10,000 less 2,000 of output: summarized above 7,500, below 85% (8,500).
    p = planner(run_of(100, 400), window=10_000, max_output=2_000, chars_per_token=4.0)
    k, (end, _, _) = first_summary(p)
    assert p.d[end] > 7_500 >= p.d[p.sk.ends[k - 1]]


def test_keeps_the_newest_tenth_of_the_window_and_the_call_with_its_results():
    p = planner(run_of(100, 400), window=10_000, max_output=0, chars_per_token=4.0)
    _, (end, sys_end, gap_end) = first_summary(p)
    assert sys_end == 1 and p.sk.roles[gap_end] == "assistant"
    kept = p.d[end] - p.d[gap_end]
    assert kept <= 1_000 + p.counts[gap_end]  # at most one call beyond the target
    assert p.d[end] - p.d[gap_end - 2] > 1_000  # one round earlier would not fit


def test_resummarizes_as_the_run_grows_each_summary_replacing_the_one_before():
    p = planner(run_of(400, 400), window=10_000, max_output=0, chars_per_token=4.0)
    got = plans(p)
    boundaries = sorted({gap_end for _, _, gap_end in got if gap_end})
    assert len(boundaries) >= 5
    for end, gap_start, gap_end in got:
        if gap_end:  # one summary, then the kept messages: never over the trigger
            assert gap_start == 1
            total = p.d[1] + p.summary_count + p.d[end] - p.d[gap_end]
            assert total < 8_500


def test_without_a_profile_fixed_trigger_and_six_messages_kept():
    p = planner(run_of(100, 400), profile=False, fallback_trigger=5_000, chars_per_token=4.0)
    k, (end, _, gap_end) = first_summary(p)
    assert p.d[end] >= 5_000 > p.d[p.sk.ends[k - 1]]
    assert end - gap_end == 6 and p.sk.roles[gap_end] == "assistant"


def test_an_odd_cut_moves_back_to_the_call_so_seven_messages_are_kept():
    p = planner(run_of(100, 400), profile=False, fallback_trigger=5_000, fallback_keep_messages=5)
    _, (end, _, gap_end) = first_summary(p)
    assert end - gap_end == 6  # the 5th newest is a result: its call is kept too


def test_the_summary_message_is_a_parameter_plus_its_wrapper():
    p = planner(run_of(100, 400), window=10_000, summary_tokens=777)
    assert 777 + 40 < p.note < 777 + 80


# --- Random runs against a plain model of the middleware --------------------------------


@st.composite
def random_runs(draw: st.DrawFn) -> list[Message]:
    messages = [system(draw(st.integers(0, 2_000))), user(draw(st.integers(1, 3_000)))]
    calls = 0
    for _ in range(draw(st.integers(0, 40))):
        roll = draw(st.integers(0, 9))
        if roll == 0:
            messages += [answer(draw(st.integers(1, 500))), user(draw(st.integers(1, 3_000)))]
        width = draw(st.integers(1, 3))
        ids = [f"c{calls + j}" for j in range(width)]
        calls += width
        parts = tuple(ToolCallPart(i, "fetch", "{}") for i in ids)
        messages.append(Message("assistant", parts))
        messages += [result(i, draw(st.integers(0, 6_000))) for i in ids]
    if draw(st.booleans()):
        messages.append(answer())
    return messages


def reference(p: DeepAgentsPlanner) -> list[int | None]:
    """The summary boundary after each request, found the slow way: build the list the
    middleware sees, count it, search it message by message."""
    sk, counts, prm = p.sk, p.counts, p.p
    boundary: int | None = None
    out = []
    for end in sk.ends:
        lo = p.sys_end if boundary is None else boundary
        eff = ([] if boundary is None else [-1]) + list(range(lo, end))
        size = [p.summary_count if i < 0 else counts[i] for i in eff]
        total = sum(counts[: p.sys_end]) + sum(size)
        if prm.profile:
            budget = int(p.window * 0.95) - prm.max_output
            hit = total >= int(p.window * prm.trigger_fraction) or total > budget
        else:
            hit = total >= prm.fallback_trigger
        m = _reference_cut(p, eff, size) if hit else 0
        if m > 0:
            boundary = eff[m] if m < len(eff) else end
        out.append(boundary)
    return out


def _reference_cut(p: DeepAgentsPlanner, eff: list[int], size: list[int]) -> int:
    prm, sk = p.p, p.sk
    if prm.profile:
        target = int(p.window * prm.keep_fraction)
        if sum(size) <= target:
            return 0
        m = next((m for m in range(len(eff)) if sum(size[m:]) <= target), len(eff))
        if m == len(eff):
            m = 0 if len(eff) == 1 else len(eff) - 1
    else:
        if len(eff) <= prm.fallback_keep_messages:
            return 0
        m = len(eff) - prm.fallback_keep_messages
    if m < len(eff) and eff[m] >= 0 and sk.kind(eff[m]) == "tool_result":
        owners = set()
        j = m
        while j < len(eff) and sk.kind(eff[j]) == "tool_result":
            owners.add(sk.answers[eff[j]])
            j += 1
        back = [k for k in range(m - 1, -1, -1) if eff[k] in owners]
        m = back[0] if back else j
    return m


@settings(max_examples=200, deadline=None)
@given(
    random_runs(),
    st.integers(2_000, 30_000),
    st.booleans(),
    st.sampled_from([0, 500, 3_000]),
    st.sampled_from([3.3, 4.0]),
)
def test_planner_matches_the_plain_model(messages, window, profile, reserve, rate):
    p = planner(
        messages,
        window=window,
        profile=profile,
        max_output=reserve,
        chars_per_token=rate,
        fallback_trigger=window,
        summary_tokens=window // 20,
    )
    got = [pl.gap_end if pl.gap_end else None for pl in map(p.plan, p.sk.ends)]
    assert got == reference(p)


@settings(max_examples=100, deadline=None)
@given(random_runs(), st.integers(2_000, 30_000), st.booleans())
def test_a_call_is_never_separated_from_its_results(messages, window, profile):
    p = planner(messages, window=window, profile=profile, fallback_trigger=window)
    sk = p.sk
    for plan in map(p.plan, sk.ends):
        kept_results = range(plan.gap_end, plan.end) if plan.gap_end else ()
        assert all(sk.answers[j] < 0 or sk.answers[j] >= plan.gap_end for j in kept_results)


@settings(max_examples=40, deadline=None)
@given(random_runs(), st.integers(2_000, 30_000), st.data())
def test_request_k_depends_only_on_the_messages_before_it(messages, window, data):
    full = planner(messages, window=window, tool_token_limit=500, human_token_limit=700)
    whole = list(map(full.plan, full.sk.ends))
    k = data.draw(st.integers(0, len(whole) - 1))
    prefix = planner(messages[: whole[k].end], window=window, tool_token_limit=500,
                     human_token_limit=700)  # fmt: skip
    cut = list(map(prefix.plan, prefix.sk.ends))
    assert cut[: k + 1] == whole[: k + 1]
    end = whole[k].end
    assert prefix.statics.offloaded == full.statics.offloaded[:end]
    assert prefix.statics.offload_tokens == full.statics.offload_tokens[:end]
