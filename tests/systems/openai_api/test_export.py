"""The OpenAI exports, run: each Python snippet is executed with the installed openai
SDK and OpenAI Agents SDK against an httpx.MockTransport, and the request body the SDK
sends (or the object the snippet builds) holds the chosen parameters; each JSON snippet
parses to them. The trimmer the snippet builds trims, request for request, the tool
outputs the simulation trims."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from agents import Agent, RunConfig, Runner
from agents.extensions import ToolOutputTrimmer
from agents.models.openai_provider import OpenAIProvider
from agents.run_config import CallModelData, ModelInputData
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import simulate
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart
from contextsim.registry import EXPORTERS, POLICIES, ExportContext, Snippet, export
from contextsim.systems.openai_api.policies import CompactionParams, TrimmerParams, TruncationParams
from tests.conftest import off_the_main_thread

EST = ESTIMATORS["chars4"]
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "gpt-5",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 1,
        "output_tokens": 1,
        "total_tokens": 2,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}


class Upstream:
    """A fake OpenAI API: records the JSON body of every request, answers RESPONSE."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json=RESPONSE)


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[Upstream]:
    """openai.OpenAI() as a snippet calls it, sending to the fake API."""
    fake = Upstream()
    real = openai.OpenAI

    def client(**kwargs: Any) -> openai.OpenAI:
        transport = httpx.MockTransport(fake)
        return real(api_key="test", http_client=httpx.Client(transport=transport), **kwargs)

    monkeypatch.setattr(openai, "OpenAI", client)
    yield fake


def run_snippet(snippet: Snippet) -> dict[str, Any]:
    """Execute a Python snippet in a fresh namespace; its names afterwards."""
    assert snippet.language == "python"
    namespace: dict[str, Any] = {}
    exec(compile(snippet.text, f"<{snippet.target}>", "exec"), namespace)
    return namespace


def by_target(snippets: tuple[Snippet, ...]) -> dict[str, Snippet]:
    return {s.target: s for s in snippets}


def sent_by_agent(agent: Agent[Any]) -> dict[str, Any]:
    """The Responses request body the Agents SDK sends for `agent` (one run)."""
    fake = Upstream()
    client = openai.AsyncOpenAI(
        api_key="test", http_client=httpx.AsyncClient(transport=httpx.MockTransport(fake))
    )
    config = RunConfig(model_provider=OpenAIProvider(openai_client=client), tracing_disabled=True)
    off_the_main_thread(Runner.run_sync, agent, "hello", run_config=config)
    return fake.bodies[0]


def test_every_openai_policy_has_an_exporter():
    for name in ("openai_truncation_auto", "openai_compaction", "openai_tool_output_trimmer"):
        assert name in EXPORTERS


def test_truncation_auto_is_sent_by_the_sdk_as_the_snippet_says(upstream):
    ctx = ExportContext(TruncationParams(), 400_000, 272_000, "gpt-5-mini")
    snippets = by_target(export("openai_truncation_auto", ctx))
    assert json.loads(snippets["openai-responses"].text) == {
        "model": "gpt-5-mini",
        "truncation": "auto",
    }
    run_snippet(snippets["openai-python"])
    assert upstream.bodies[0]["truncation"] == "auto"
    assert upstream.bodies[0]["model"] == "gpt-5-mini"
    agent = run_snippet(snippets["openai-agents"])["agent"]
    assert agent.model_settings.truncation == "auto"
    assert sent_by_agent(agent)["truncation"] == "auto"


def test_truncation_notes_the_window_and_what_cannot_be_set():
    ctx = ExportContext(TruncationParams(reserved_output=8_000), 400_000, 272_000, "gpt-5")
    notes = " ".join(export("openai_truncation_auto", ctx)[0].notes)
    assert "272,000" in notes and "reserved_output (8,000) cannot be set" in notes


def test_a_run_of_another_provider_exports_an_openai_model_and_says_so():
    ctx = ExportContext(TruncationParams(), 400_000, 200_000, "claude-sonnet-4-5")
    snippet = export("openai_truncation_auto", ctx)[0]
    assert json.loads(snippet.text)["model"] == "gpt-5"
    assert any("claude-sonnet-4-5" in n for n in snippet.notes)


def test_compaction_threshold_is_sent_by_the_sdk_as_the_snippet_says(upstream):
    params = CompactionParams(compact_threshold=123_456, compacted_tokens=900)
    snippets = by_target(export("openai_compaction", ExportContext(params, 1, 1, "gpt-5")))
    expected = [{"type": "compaction", "compact_threshold": 123_456}]
    assert json.loads(snippets["openai-responses"].text)["context_management"] == expected
    run_snippet(snippets["openai-python"])
    assert upstream.bodies[0]["context_management"] == expected
    agent = run_snippet(snippets["openai-agents"])["agent"]
    assert agent.model_settings.context_management == expected
    assert sent_by_agent(agent)["context_management"] == expected
    assert any("compacted_tokens (900) cannot be set" in n for n in snippets["openai-python"].notes)


@pytest.mark.parametrize(
    "params",
    [
        TrimmerParams(),
        TrimmerParams(recent_turns=3, max_output_chars=800, preview_chars=50),
        TrimmerParams(trimmable_tools=("search", "grep")),
    ],
)
def test_the_trimmer_snippet_builds_the_sdks_trimmer_with_the_chosen_parameters(params):
    (snippet,) = export("openai_tool_output_trimmer", ExportContext(params, 1, 1))
    config = run_snippet(snippet)["run_config"]
    trimmer = config.call_model_input_filter
    assert isinstance(config, RunConfig) and isinstance(trimmer, ToolOutputTrimmer)
    assert trimmer.recent_turns == params.recent_turns
    assert trimmer.max_output_chars == params.max_output_chars
    assert trimmer.preview_chars == params.preview_chars
    expected = frozenset(params.trimmable_tools) if params.trimmable_tools else None
    assert trimmer.trimmable_tools == expected


def items_of(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The Responses input items of messages of one text, call or result each."""
    items: list[dict[str, Any]] = []
    for m in messages:
        part = m.parts[0]
        if isinstance(part, ToolCallPart):
            items.append(
                {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": part.arguments,
                }
            )
        elif isinstance(part, ToolResultPart):
            items.append(
                {"type": "function_call_output", "call_id": part.call_id, "output": part.text}
            )
        else:
            items.append({"role": m.role, "content": m.text})
    return items


@st.composite
def agent_runs(draw: st.DrawFn) -> Run:
    """User turns of tool rounds (one call each), outputs well away from any limit."""
    messages: list[Message] = []
    call = 0
    for turn in range(draw(st.integers(1, 5))):
        messages.append(Message("user", (TextPart(f"question {turn}"),)))
        for _ in range(draw(st.integers(0, 4))):
            tool = draw(st.sampled_from(("search", "grep")))
            size = draw(st.sampled_from((100, 400, 2_000, 10_000)))
            messages.append(Message("assistant", (ToolCallPart(f"c{call}", tool, "{}"),)))
            messages.append(Message("tool", (ToolResultPart(f"c{call}", "o" * size),)))
            call += 1
        messages.append(Message("assistant", (TextPart(f"answer {turn}"),)))
    return Run("a", tuple(messages))


@settings(max_examples=60, deadline=None)
@given(
    agent_runs(),
    st.integers(1, 3),
    st.sampled_from((500, 1_000)),
    st.sampled_from((0, 200)),
    st.sampled_from(((), ("search",))),
)
def test_the_exported_trimmer_trims_what_the_simulation_trims(run, turns, most, preview, tools):
    params = TrimmerParams(turns, most, preview, tools)
    namespace = run_snippet(export("openai_tool_output_trimmer", ExportContext(params, 1, 1))[0])
    trimmer = namespace["run_config"].call_model_input_filter
    sk = build(run, EST)
    sim = simulate(
        sk,
        POLICIES["openai_tool_output_trimmer"],
        params,
        budget=10**7,
        hard_limit=10**8,
        count=EST.count,
    )
    agent: Agent[Any] = Agent(name="a")
    for record in sim.records:
        items = items_of(run.messages[: record.end])
        out = trimmer(CallModelData(ModelInputData(items, None), agent, None)).input
        trimmed = [i for i, (a, b) in enumerate(zip(items, out, strict=True)) if a != b]
        letters = sim.dispositions(record.step)
        assert trimmed == [i for i, letter in enumerate(letters) if letter == "c"], record.step
