"""Invariants of `langchain_summarization` with its triggers set (the registry-wide
properties run it with LangChain's default, no trigger, where it never summarizes)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.policy import make_params
from contextsim.engine.simulate import simulate
from contextsim.registry import POLICIES
from contextsim.systems.langchain.summarization import LangChainSummaryParams
from tests.engine.histories import histories

EST = ESTIMATORS["chars4"]


@st.composite
def summary_params(draw: st.DrawFn) -> LangChainSummaryParams:
    keep = draw(st.sampled_from(("messages", "tokens", "fraction")))
    return LangChainSummaryParams(
        trigger_tokens=draw(st.one_of(st.none(), st.integers(1, 400_000))),
        trigger_messages=draw(st.one_of(st.none(), st.integers(1, 40))),
        trigger_fraction=draw(st.one_of(st.none(), st.floats(0.01, 1.0))),
        trigger_all=draw(st.booleans()),
        keep_messages=draw(st.integers(1, 30)),
        keep_tokens=draw(st.integers(1, 200_000)) if keep == "tokens" else None,
        keep_fraction=draw(st.floats(0.01, 1.0)) if keep == "fraction" else None,
        window=draw(st.one_of(st.none(), st.integers(1_000, 1_000_000))),
        chars_per_token=draw(st.sampled_from((4.0, 3.3))),
        trim_tokens_to_summarize=draw(st.one_of(st.none(), st.integers(1, 10_000))),
        summary_tokens=draw(st.integers(0, 5_000)),
    )


def run_sim(run, p):
    sk = build(run, EST)
    return sk, simulate(
        sk,
        POLICIES["langchain_summarization"],
        p,
        budget=200_000,
        hard_limit=600_000,
        count=EST.count,
    )


@settings(max_examples=80, deadline=None)
@given(histories(), summary_params())
def test_a_tool_call_is_never_summarized_apart_from_its_results(run, p):
    sk, sim = run_sim(run, p)
    for r in sim.records:
        letters = sim.dispositions(r.step)
        for i in range(r.end):
            call = sk.answers[i]
            if call >= 0:
                assert (letters[i] == "s") == (letters[call] == "s"), (r.step, i, letters)


@settings(max_examples=80, deadline=None)
@given(histories(), summary_params())
def test_the_summary_only_grows_and_the_system_prompt_stays(run, p):
    _, sim = run_sim(run, p)
    boundary = 0
    for r in sim.records:
        letters = sim.dispositions(r.step)
        assert "s" not in letters[: r.plan.gap_start]
        assert all(d == "k" for d in letters[: r.plan.gap_start])
        assert r.plan.gap_end >= boundary
        boundary = r.plan.gap_end
        if r.plan.gap_end:
            assert r.plan.gap_note > 0 and letters[r.end - 1] == "k"


@settings(max_examples=60, deadline=None)
@given(histories(), st.integers(0, 60), summary_params())
def test_request_k_depends_only_on_the_messages_before_it(run, cut, p):
    prefix = replace(run, messages=run.messages[: min(cut, len(run.messages))])
    _, short = run_sim(prefix, p)
    _, full = run_sim(run, p)
    complete = [r for r in short.records if r.end < len(prefix.messages)]
    for a, b in zip(complete, full.records, strict=False):
        assert (a.end, a.sent, a.plan) == (b.end, b.sent, b.plan)


@settings(max_examples=60, deadline=None)
@given(histories(), st.integers(1, 30))
def test_a_messages_trigger_keeps_at_least_the_newest_messages_asked(run, keep):
    # keep_messages counts LangChain messages (a saved message of parallel results is
    # several): after every summary at least that many follow it, the cut only moving
    # back to the call of a result it fell on.
    p = LangChainSummaryParams(trigger_messages=keep + 1, keep_messages=keep)
    sk, sim = run_sim(run, p)
    for r in sim.records:
        if r.plan.gap_end:
            pieces = sum(len(sk.langchain[i]) for i in range(r.plan.gap_end, r.end))
            assert pieces >= keep, (r.step, pieces)


def test_parameters_are_checked_as_langchain_checks_them():
    with pytest.raises(ValueError, match="trigger_fraction"):
        LangChainSummaryParams(trigger_fraction=1.5)
    with pytest.raises(ValueError, match="keep_messages"):
        LangChainSummaryParams(keep_messages=0)
    with pytest.raises(ValueError, match="at most one"):
        LangChainSummaryParams(keep_tokens=10, keep_fraction=0.5)
    p = make_params(LangChainSummaryParams, {"trigger_tokens": "1000", "keep_fraction": "0.3"})
    assert p.triggers == (("tokens", 1000),) and p.keep == ("fraction", 0.3)
    assert make_params(LangChainSummaryParams, {"trim_tokens_to_summarize": "none"}).keep == (
        "messages",
        20,
    )
