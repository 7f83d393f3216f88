"""Differential tests: `langchain_summarization` against LangChain's own
SummarizationMiddleware (langchain 1.5.2), run as an agent runs it, on random
histories (Hypothesis draws the history's seed and the parameters).

Each history is built once as a contextsim Run and once as LangChain messages
(tests.systems.langchain.test_differential), some with parallel results grouped in one
message; before every model call the middleware's before_model gets the state's
messages (the system prompt apart, as create_agent keeps it) and its update becomes the
next state, with a fake chat model whose summary is fixed. For every request, the
messages the state still holds must be exactly those the policy's plan keeps, and the
summary (a written one, or LangChain's "too long to summarize") the one whose size the
plan counts.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.counting.skeleton import approx_tokens
from contextsim.engine.cuts import leading_system
from contextsim.engine.simulate import simulate
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart
from contextsim.registry import POLICIES
from contextsim.systems.langchain.summarization import (
    SUMMARY_PREFIX,
    TOO_LONG,
    LangChainSummaryParams,
    summary_text,
)
from tests.systems.langchain.test_differential import _index, random_run, to_langchain

EST = ESTIMATORS["chars4"]


class FakeAnthropicChat(FakeListChatModel):
    """A fake chat model LangChain takes for an Anthropic one (its counter then counts
    3.3 characters per token)."""

    @property
    def _llm_type(self) -> str:
        return "anthropic-chat"


def _model(p: LangChainSummaryParams) -> FakeListChatModel:
    kind = FakeAnthropicChat if p.chars_per_token == 3.3 else FakeListChatModel
    profile = {"max_input_tokens": p.window} if p.window is not None else None
    return kind(responses=[summary_text(p.summary_tokens)], profile=profile)


def _trigger(p: LangChainSummaryParams) -> Any:
    pairs = [(k, int(v) if k != "fraction" else v) for k, v in p.triggers]
    if not pairs:
        return None
    if p.trigger_all:
        return dict(pairs)
    return pairs[0] if len(pairs) == 1 else pairs


def middleware(p: LangChainSummaryParams) -> SummarizationMiddleware[Any, Any, Any]:
    kind, value = p.keep
    return SummarizationMiddleware(
        _model(p),
        trigger=_trigger(p),
        keep=(kind, value if kind == "fraction" else int(value)),  # type: ignore[arg-type]
        trim_tokens_to_summarize=p.trim_tokens_to_summarize,
    )


def real_states(run: Run, p: LangChainSummaryParams, ends: tuple[int, ...]) -> list[list[Any]]:
    """The state's messages each model call sees, once before_model has run."""
    forms = to_langchain(run)
    lead = leading_system(build(run, EST))
    mw = middleware(p)
    state: list[BaseMessage] = []
    seen = lead
    out = []
    for end in ends:
        for group in forms[seen:end]:
            state.extend(group)
        seen = max(seen, end)
        update = mw.before_model({"messages": state}, None)  # type: ignore[arg-type]
        if update is not None:
            state = list(update["messages"][1:])  # after RemoveMessage(REMOVE_ALL_MESSAGES)
        out.append(list(state))
    return out


def _is_summary(m: BaseMessage) -> bool:
    return m.additional_kwargs.get("lc_source") == "summarization"


def _params(draw: Any, total: int, size: int) -> LangChainSummaryParams:
    """Parameters scaled to the history, so that most runs summarize at least once."""
    window = draw(st.integers(max(1, total // 10), max(2, total * 2)))
    triggers: dict[str, Any] = {}
    for kind in draw(st.sets(st.sampled_from(("tokens", "messages", "fraction")))):
        if kind == "tokens":
            triggers["trigger_tokens"] = draw(st.integers(1, max(1, int(total * 1.1))))
        elif kind == "messages":
            triggers["trigger_messages"] = draw(st.integers(1, max(1, size + 2)))
        else:
            triggers["trigger_fraction"] = draw(st.floats(0.01, 1.0))
    keep = draw(st.sampled_from(("messages", "tokens", "fraction")))
    if keep == "messages":
        kept: dict[str, Any] = {"keep_messages": draw(st.integers(1, 25))}
    elif keep == "tokens":
        kept = {"keep_tokens": draw(st.integers(1, max(1, total // 2)))}
    else:
        kept = {"keep_fraction": draw(st.floats(0.01, 1.0))}
    trim = draw(st.sampled_from((None, 4_000, 0)))
    return LangChainSummaryParams(
        **triggers,
        **kept,
        trigger_all=draw(st.booleans()),
        window=window,
        chars_per_token=draw(st.sampled_from((4.0, 3.3))),
        trim_tokens_to_summarize=trim if trim != 0 else draw(st.integers(1, 20_000)),
        summary_tokens=draw(st.integers(0, 3_000)),
    )


def check(run: Run, p: LangChainSummaryParams) -> tuple[int, set[str]]:
    """Compares every request; returns the requests with a summary and the kinds of
    summary seen ("written", "too long")."""
    sk = build(run, EST)
    sim = simulate(
        sk, POLICIES["langchain_summarization"], p, budget=10**9, hard_limit=10**9, count=EST.count
    )
    lead = leading_system(sk)
    written = MESSAGE_OVERHEAD + EST.count(SUMMARY_PREFIX) + p.summary_tokens
    too_long = MESSAGE_OVERHEAD + EST.count(SUMMARY_PREFIX + TOO_LONG)
    summarized, kinds = 0, set()
    for k, state in enumerate(real_states(run, p, sk.ends)):
        plan = sim.records[k].plan
        letters = sim.dispositions(k)
        kept = {_index(m) for m in state if not _is_summary(m)}
        ours = {i for i, d in enumerate(letters) if d == "k" and i >= lead}
        assert ours == kept, (run.title, k, p)
        summaries = [m for m in state if _is_summary(m)]
        assert len(summaries) == int(plan.gap_end > plan.gap_start), (run.title, k)
        if summaries:
            assert summaries == state[:1]
            content = summaries[0].content
            if content == SUMMARY_PREFIX + TOO_LONG:
                assert plan.gap_note == too_long, (run.title, k)
                kinds.add("too long")
            else:
                assert content == SUMMARY_PREFIX + summary_text(p.summary_tokens)
                assert plan.gap_note == written, (run.title, k)
                kinds.add("written")
            summarized += 1
    return summarized, kinds


def grouped(run: Run, rng: random.Random) -> Run:
    """The run with some consecutive tool results in one user message, some followed by
    text in it: saved messages that are several LangChain messages (ToolMessages, then
    a HumanMessage), where the middleware may cut inside a saved message."""
    out: list[Message] = []
    messages = list(run.messages)
    i = 0
    while i < len(messages):
        m = messages[i]
        j = i
        while j < len(messages) and messages[j].tool_results and not messages[j].text:
            j += 1
        if j > i and rng.random() < 0.7:
            parts = [part for n in messages[i:j] for part in n.parts]
            if rng.random() < 0.4:
                parts.append(TextPart("note " * rng.randint(0, 300) + "\nlast line"))
            out.append(Message("user", tuple(parts)))
            i = j
            continue
        out.append(m)
        i += 1
    return Run(run.title, tuple(out))


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**20), st.booleans(), st.data())
def test_langchain_summarization_keeps_what_summarization_middleware_keeps(seed, group, data):
    run = random_run(seed)
    if group:
        run = grouped(run, random.Random(seed))
    sk = build(run, EST)
    p = _params(data.draw, sum(approx_tokens(sk)[leading_system(sk) :]), sk.size)
    check(run, p)


def test_the_differential_runs_reach_both_kinds_of_summary():
    # Over fixed seeds and parameters: most runs summarize, some repeatedly, and both a
    # written summary and LangChain's "too long to summarize" occur (so the test above
    # compares something).
    acted, kinds, repeated = 0, set(), 0
    for seed in range(40):
        run = random_run(seed)
        sk = build(run, EST)
        total = sum(approx_tokens(sk)[leading_system(sk) :])
        rng = random.Random(seed)
        p = LangChainSummaryParams(
            trigger_tokens=max(1, int(total * rng.uniform(0.1, 0.6))),
            keep_messages=rng.randint(1, 8),
            trim_tokens_to_summarize=rng.choice((4_000, 500, None)),
            summary_tokens=rng.randint(10, 1_500),
        )
        summarized, seen = check(run, p)
        acted += summarized > 0
        repeated += summarized > 1
        kinds |= seen
    assert acted >= 25 and repeated >= 15
    assert kinds == {"written", "too long"}


def _tool_loop(calls: int, size: int) -> Run:
    """A task then `calls` rounds of one call and one result of `size` characters."""
    messages = [Message("system", (TextPart("s" * 100),)), Message("user", (TextPart("go"),))]
    for n in range(calls):
        call = ToolCallPart(f"c{n}", "read_file", '{"path": "a"}')
        messages.append(Message("assistant", (TextPart("reading"), call)))
        messages.append(Message("tool", (ToolResultPart(f"c{n}", "r" * size),)))
    return Run("loop", tuple(messages))


def test_a_long_tool_loop_gets_too_long_to_summarize_with_the_default_trim():
    # With trim_tokens_to_summarize at its default (4,000) the summarizer sees only the
    # newest 4,000 tokens of what it summarizes, from a HumanMessage on: in a tool loop
    # whose results are bigger than that there is none, and LangChain writes "Previous
    # conversation was too long to summarize." in place of the summary.
    run = _tool_loop(30, 20_000)
    p = LangChainSummaryParams(trigger_tokens=50_000, keep_messages=4)
    states = real_states(run, p, build(run, EST).ends)
    contents = [s[0].content for s in states if s and _is_summary(s[0])]
    assert contents and contents[-1] == SUMMARY_PREFIX + TOO_LONG
    summarized, kinds = check(run, p)
    assert summarized and "too long" in kinds


def test_a_cut_on_a_tool_result_moves_back_to_its_call():
    # keep 1 message would cut between a call and its result: LangChain keeps both.
    run = _tool_loop(6, 400)
    p = LangChainSummaryParams(trigger_messages=6, keep_messages=1, trim_tokens_to_summarize=None)
    states = real_states(run, p, build(run, EST).ends)
    last = states[-1]
    assert isinstance(last[1], AIMessage) and isinstance(last[2], ToolMessage)
    check(run, p)


def test_no_trigger_never_summarizes():
    run = _tool_loop(20, 5_000)
    p = LangChainSummaryParams()
    assert p.triggers == ()
    sk = build(run, EST)
    sim = simulate(
        sk, POLICIES["langchain_summarization"], p, budget=1_000, hard_limit=2_000, count=EST.count
    )
    assert all(r.plan.gap_end == 0 for r in sim.records)
    assert all(not any(_is_summary(m) for m in s) for s in real_states(run, p, sk.ends))
