"""The LangChain and Deep Agents exports, run: each Python snippet is executed (in a
fresh namespace) with the installed langchain 1.5.2 and deepagents 0.7.32, and the
objects it builds carry the chosen parameters. A Claude model is the real ChatAnthropic
(built offline, never called); any other model is a fake chat model standing in for
init_chat_model. The trimming snippet's function trims, message for message, what the
`langchain_trim` simulation trims."""

from __future__ import annotations

from typing import Any

import deepagents.graph
import langchain.chat_models
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    SummarizationMiddleware,
)
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.counting.skeleton import approx_tokens
from contextsim.engine.simulate import simulate
from contextsim.registry import EXPORTERS, POLICIES, ExportContext, Snippet, export
from contextsim.systems.langchain.deepagents import DeepAgentsParams
from contextsim.systems.langchain.export import DEFAULT_MODEL, TRUNCATE_MAX_LENGTH, TRUNCATION_TEXT
from contextsim.systems.langchain.policies import LangChainClearParams, LangChainTrimParams
from contextsim.systems.langchain.summarization import LangChainSummaryParams
from tests.systems.langchain.test_differential import _index, random_run, to_langchain

EST = ESTIMATORS["chars4"]
NAMES = ("langchain_clear_tool_uses", "langchain_trim", "langchain_summarization", "deepagents")


@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """init_chat_model builds a fake chat model for any model but Anthropic's, and
    records the ids it was asked for."""
    asked: list[str] = []
    real = langchain.chat_models.init_chat_model

    def fake(model: str, **kwargs: Any) -> Any:
        asked.append(model)
        if model.startswith("anthropic:"):
            return real(model, **kwargs)  # ChatAnthropic builds offline
        kwargs.pop("max_tokens", None)
        return GenericFakeChatModel(messages=iter(()), profile={"max_input_tokens": 1}, **kwargs)

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", fake)
    return asked


def run_snippet(snippet: Snippet) -> dict[str, Any]:
    assert snippet.language == "python"
    namespace: dict[str, Any] = {}
    exec(compile(snippet.text, f"<{snippet.target}>", "exec"), namespace)
    return namespace


def only(policy: str, ctx: ExportContext) -> Snippet:
    snippets = export(policy, ctx)
    assert len(snippets) == 1
    return snippets[0]


def test_every_langchain_policy_has_an_exporter():
    assert set(NAMES) <= set(EXPORTERS)


# --- ContextEditingMiddleware ------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 500_000),
    st.integers(0, 10),
    st.integers(0, 50_000),
    st.lists(st.sampled_from(("read_file", "bash", "grep", 'we\'ird "name"')), unique=True),
    st.booleans(),
    st.text(max_size=30),
)
def test_clear_tool_uses_snippet_builds_the_edit_with_the_chosen_parameters(
    trigger, keep, at_least, exclude, inputs, placeholder
):
    p = LangChainClearParams(trigger, keep, at_least, tuple(exclude), inputs, placeholder)
    ns = run_snippet(only("langchain_clear_tool_uses", ExportContext(p, 1, 1, "claude-opus-4-1")))
    mw = ns["context_editing"]
    assert isinstance(mw, ContextEditingMiddleware) and mw.token_count_method == "approximate"
    assert mw.edits == [
        ClearToolUsesEdit(
            trigger=trigger,
            clear_at_least=at_least,
            keep=keep,
            clear_tool_inputs=inputs,
            exclude_tools=tuple(exclude),
            placeholder=placeholder,
        )
    ]
    assert ns["model"].model == "claude-opus-4-1"
    assert ns["agent"] is not None


def test_an_unknown_model_is_named_and_said(fake_models):
    snippet = only("langchain_clear_tool_uses", ExportContext(LangChainClearParams(), 1, 1, ""))
    run_snippet(snippet)
    assert fake_models == [DEFAULT_MODEL]
    assert any("does not name its model" in n for n in snippet.notes)
    run_snippet(
        only("langchain_clear_tool_uses", ExportContext(LangChainClearParams(), 1, 1, "gpt-5"))
    )
    assert fake_models[-1] == "gpt-5"


# --- trim_messages ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_trim_snippet_trims_what_the_simulation_trims(seed, fake_models):
    run = random_run(seed)
    sk = build(run, EST)
    budget = max(1, sum(approx_tokens(sk)) // (2 + seed % 3))
    p = LangChainTrimParams(
        include_system=seed % 4 != 0,
        start_on=(("human",), (), ("ai",))[seed % 3],
        allow_partial=seed % 2 == 1,
    )
    ns = run_snippet(only("langchain_trim", ExportContext(p, budget, budget * 2, "gpt-5")))
    assert ns["MAX_TOKENS"] == budget and ns["agent"] is not None
    sim = simulate(
        sk, POLICIES["langchain_trim"], p, budget=budget, hard_limit=budget * 2, count=EST.count
    )
    forms = to_langchain(run)
    acted = 0
    for k, end in enumerate(sk.ends):
        history = [m for group in forms[:end] for m in group]
        originals = {id(m) for m in history}
        kept = {_index(m) for m in ns["trimmed"](history) if id(m) in originals}
        letters = sim.dispositions(k)
        assert {i for i, d in enumerate(letters) if d == "k"} == kept, (seed, k)
        acted += "t" in letters
    assert acted


# --- SummarizationMiddleware --------------------------------------------------------------

SUMMARY_CASES = [
    (LangChainSummaryParams(), "claude-sonnet-4-6"),
    (LangChainSummaryParams(trigger_tokens=120_000, keep_tokens=9_000), "claude-sonnet-4-6"),
    (
        LangChainSummaryParams(
            trigger_fraction=0.8, trigger_messages=90, keep_fraction=0.25, window=300_000
        ),
        "claude-haiku-4-5",
    ),
    (
        LangChainSummaryParams(
            trigger_tokens=5_000,
            trigger_messages=12,
            trigger_all=True,
            keep_messages=7,
            trim_tokens_to_summarize=None,
            chars_per_token=4.0,
        ),
        "claude-sonnet-4-6",
    ),
    (LangChainSummaryParams(trigger_fraction=0.5, chars_per_token=3.3), "gpt-5"),
    (LangChainSummaryParams(trigger_messages=40, trim_tokens_to_summarize=1_234), ""),
]


@pytest.mark.parametrize(("p", "model"), SUMMARY_CASES)
def test_summarization_snippet_builds_the_middleware_with_the_chosen_parameters(
    p, model, fake_models
):
    ctx = ExportContext(p, 150_000, 200_000, model)
    snippet = only("langchain_summarization", ctx)
    ns = run_snippet(snippet)
    mw = ns["summarization"]
    assert isinstance(mw, SummarizationMiddleware) and ns["agent"] is not None
    expected = [{k: (v if k == "fraction" else int(v)) for k, v in p.triggers}]
    if not p.trigger_all:
        expected = [{k: v} for clause in expected for k, v in clause.items()]
    assert mw._trigger_clauses == ([] if not p.triggers else expected)
    kind, value = p.keep
    assert mw.keep == (kind, value if kind == "fraction" else int(value))
    assert mw.trim_tokens_to_summarize == p.trim_tokens_to_summarize
    assert mw.token_counter.keywords.get("chars_per_token", 4.0) == p.chars_per_token
    if p.trigger_fraction is not None or p.keep_fraction is not None:
        assert mw._get_profile_limits() == (p.window or ctx.hard_limit)
    assert any(str(p.summary_tokens) in n.replace(",", "") for n in snippet.notes)
    if not p.triggers:
        assert any("never summarizes" in n for n in snippet.notes)


@pytest.mark.parametrize("seed", range(6))
def test_summarization_snippet_decides_as_the_simulation(seed, fake_models):
    # The middleware the snippet builds (its model a fake one here) triggers and cuts
    # where the policy does on its first summarization.
    run = random_run(seed)
    sk = build(run, EST)
    total = sum(approx_tokens(sk))
    p = LangChainSummaryParams(trigger_tokens=total // 3, keep_tokens=total // 10)
    ns = run_snippet(only("langchain_summarization", ExportContext(p, 1, 10**6, "gpt-5")))
    mw = ns["summarization"]
    sim = simulate(
        sk, POLICIES["langchain_summarization"], p, budget=10**9, hard_limit=10**9, count=EST.count
    )
    first = next(r for r in sim.records if r.plan.gap_end)
    forms = to_langchain(run)
    lead = first.plan.gap_start
    state = [m for group in forms[lead : first.end] for m in group]
    assert mw._should_summarize(state, mw.token_counter(state))
    cut = mw._determine_cutoff_index(state)
    assert _index(state[cut]) == first.plan.gap_end
    if first.step:
        earlier = [m for group in forms[lead : sk.ends[first.step - 1]] for m in group]
        assert not mw._should_summarize(earlier, mw.token_counter(earlier))


# --- Deep Agents --------------------------------------------------------------------------

DEEP_CASES = [
    (DeepAgentsParams(), "claude-sonnet-4-6"),
    (
        DeepAgentsParams(
            window=400_000,
            trigger_fraction=0.7,
            keep_fraction=0.2,
            max_output=32_000,
            tool_token_limit=8_000,
            human_token_limit=None,
        ),
        "claude-sonnet-4-6",
    ),
    (
        DeepAgentsParams(
            profile=False, fallback_trigger=90_000, fallback_keep_messages=11, chars_per_token=4.0
        ),
        "claude-opus-4-1",
    ),
    (DeepAgentsParams(chars_per_token=4.0, exempt_tools=("ls",)), "gpt-5"),
]


@pytest.mark.parametrize(("p", "model"), DEEP_CASES)
def test_deepagents_snippet_builds_the_agent_with_the_chosen_parameters(
    p, model, fake_models, monkeypatch
):
    stacks: list[list[Any]] = []
    real = deepagents.graph.create_agent

    def recording(*args: Any, **kwargs: Any) -> Any:
        stacks.append(list(kwargs["middleware"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(deepagents.graph, "create_agent", recording)
    ctx = ExportContext(p, 150_000, 1_000_000, model)
    snippet = only("deepagents", ctx)
    ns = run_snippet(snippet)
    assert ns["agent"] is not None
    main = stacks[-1]  # the main agent's (subagents' stacks are built before it)
    by_name = {m.name: m for m in main}
    assert [m.name for m in main].count("SummarizationMiddleware") == 1
    fs, summary = by_name["FilesystemMiddleware"], by_name["SummarizationMiddleware"]
    assert fs._tool_token_limit_before_evict == p.tool_token_limit
    assert fs._human_message_token_limit_before_evict == p.human_token_limit
    helper = summary._lc_helper
    if p.profile:
        trigger, keep = ("fraction", p.trigger_fraction), ("fraction", p.keep_fraction)
        truncate = (trigger, keep)
        assert summary._get_profile_limits() == (p.window or ctx.hard_limit)
        assert ns["model"].profile["max_input_tokens"] == (p.window or ctx.hard_limit)
    else:
        trigger = ("tokens", p.fallback_trigger)
        keep = ("messages", p.fallback_keep_messages)
        truncate = (("messages", 20), ("messages", 20))
    assert helper.trigger == trigger and helper.keep == keep
    assert helper.trim_tokens_to_summarize is None
    assert (summary._truncate_args_trigger, summary._truncate_args_keep) == truncate
    assert summary._max_arg_length == TRUNCATE_MAX_LENGTH
    assert summary._truncation_text == TRUNCATION_TEXT
    assert helper.token_counter.keywords.get("chars_per_token", 4.0) == p.chars_per_token
    if p.profile and model.startswith("claude"):
        assert ns["model"].max_tokens == p.max_output
    if p.exempt_tools != DeepAgentsParams().exempt_tools:
        assert any("cannot be set" in n for n in snippet.notes)


def test_deepagents_defaults_export_the_packages_own_defaults(monkeypatch):
    # With the policy's defaults, the snippet's middleware has the settings
    # create_deep_agent gives a model with a profile by itself.
    from deepagents.middleware.summarization import compute_summarization_defaults

    ns = run_snippet(only("deepagents", ExportContext(DeepAgentsParams(), 1, 1_000_000, "")))
    defaults = compute_summarization_defaults(ns["model"])
    stacks: list[list[Any]] = []
    real = deepagents.graph.create_agent
    monkeypatch.setattr(
        deepagents.graph,
        "create_agent",
        lambda *a, **k: stacks.append(k["middleware"]) or real(*a, **k),
    )
    deepagents.graph.create_deep_agent(model=ns["model"])
    theirs = {m.name: m for m in stacks[-1]}["SummarizationMiddleware"]
    run_snippet(only("deepagents", ExportContext(DeepAgentsParams(), 1, 1_000_000, "")))
    ours = {m.name: m for m in stacks[-1]}["SummarizationMiddleware"]
    for mw in (theirs, ours):
        assert (mw._lc_helper.trigger, mw._lc_helper.keep) == (
            defaults["trigger"],
            defaults["keep"],
        )
        settings_ = defaults["truncate_args_settings"]
        assert (mw._truncate_args_trigger, mw._truncate_args_keep) == (
            settings_["trigger"],
            settings_["keep"],
        )
        assert mw._lc_helper.trim_tokens_to_summarize is None
        assert mw._lc_helper.token_counter.keywords["chars_per_token"] == 3.3
