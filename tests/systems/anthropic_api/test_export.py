"""Anthropic's exports: each policy's `context_management` edits and beta header, as
curl, as the JSON field and as a call of the anthropic SDK (2.15.0, on httpx2), which is
run against a fake transport (httpx2.MockTransport) to see the request it really sends."""

from __future__ import annotations

import json
import shlex
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types.beta.beta_context_management_config_param import Edit
from pydantic import TypeAdapter

from contextsim.engine.policy import make_params
from contextsim.registry import EXPORTERS, export
from contextsim.systems.anthropic_api.compaction import AnthropicCompactionParams
from contextsim.systems.anthropic_api.policies import (
    AnthropicClearParams,
    AnthropicEditingParams,
    ClearThinkingParams,
)
from contextsim.systems.exporting import ExportContext, Snippet

EDITING = "context-management-2025-06-27"
COMPACTION = "compact-2026-01-12"

CASES: list[tuple[str, Any, list[dict[str, Any]], str]] = [
    (
        "anthropic_clear_tool_uses",
        AnthropicClearParams(),
        [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 100_000},
                "keep": {"type": "tool_uses", "value": 3},
            }
        ],
        EDITING,
    ),
    (
        "anthropic_clear_tool_uses",
        AnthropicClearParams(60_000, 5, 8_000, ("memory", "web_search"), True),
        [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 60_000},
                "keep": {"type": "tool_uses", "value": 5},
                "clear_at_least": {"type": "input_tokens", "value": 8_000},
                "exclude_tools": ["memory", "web_search"],
                "clear_tool_inputs": True,
            }
        ],
        EDITING,
    ),
    (
        "anthropic_clear_thinking",
        ClearThinkingParams(keep=2),
        [{"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}}],
        EDITING,
    ),
    (
        "anthropic_clear_thinking",
        ClearThinkingParams(keep_all=True),
        [{"type": "clear_thinking_20251015", "keep": "all"}],
        EDITING,
    ),
    (
        "anthropic_context_editing",
        AnthropicEditingParams(keep_thinking=4, trigger=70_000, keep=2, exclude_tools=("bash",)),
        [
            {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 4}},
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 70_000},
                "keep": {"type": "tool_uses", "value": 2},
                "exclude_tools": ["bash"],
            },
        ],
        EDITING,
    ),
    (
        "anthropic_compaction",
        AnthropicCompactionParams(),
        [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 150_000}}],
        COMPACTION,
    ),
    (
        "anthropic_compaction",
        AnthropicCompactionParams(
            trigger=90_000,
            instructions='Keep file paths, "quoted" names, it\'s важно\nand new lines.',
            pause_after_compaction=True,
            preserve_messages=3,
        ),
        [
            {
                "type": "compact_20260112",
                "trigger": {"type": "input_tokens", "value": 90_000},
                "pause_after_compaction": True,
                "instructions": 'Keep file paths, "quoted" names, it\'s важно\nand new lines.',
            }
        ],
        COMPACTION,
    ),
]
IDS = [f"{policy}-{i}" for i, (policy, *_) in enumerate(CASES)]


def snippets(policy: str, params: Any, model: str = "claude-opus-4-6") -> dict[str, Snippet]:
    found = export(policy, ExportContext(params, 400_000, 1_000_000, model))
    return {s.target: s for s in found}


def sent_by(python: str) -> httpx2.Request:
    """Run an SDK snippet in a fresh namespace with a client whose transport records
    the request and answers it as the API would."""
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "content": [{"type": "text", "text": "ok"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        )

    real = anthropic.Anthropic

    def fake_client(**kwargs: Any) -> anthropic.Anthropic:
        transport = httpx2.MockTransport(answer)
        return real(api_key="test-key", http_client=httpx2.Client(transport=transport), **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(anthropic, "Anthropic", fake_client)
        namespace: dict[str, Any] = {}
        exec(compile(python, "<snippet>", "exec"), namespace)
    assert len(seen) == 1
    assert namespace["response"].content[0].text == "ok"
    return seen[0]


@pytest.mark.parametrize(("policy", "params", "edits", "beta"), CASES, ids=IDS)
def test_the_json_field_holds_exactly_the_chosen_edits(policy, params, edits, beta):
    found = snippets(policy, params)
    field = json.loads(found["anthropic-api"].text)
    assert field == {"context_management": {"edits": edits}}
    assert json.loads(json.dumps(field)) == field
    assert any(beta in note for note in found["anthropic-api"].notes)


@pytest.mark.parametrize(("policy", "params", "edits", "beta"), CASES, ids=IDS)
def test_the_edits_are_what_the_sdks_types_accept(policy, params, edits, beta):
    # The SDK's TypedDicts ignore unknown keys: equality says there were none.
    assert TypeAdapter(list[Edit]).validate_python(edits) == edits


@pytest.mark.parametrize(("policy", "params", "edits", "beta"), CASES, ids=IDS)
def test_the_curl_call_sends_the_beta_header_and_the_edits(policy, params, edits, beta):
    words = shlex.split(snippets(policy, params)["anthropic-curl"].text.replace("\\\n", " "))
    headers = [words[i + 1] for i, w in enumerate(words) if w == "--header"]
    assert f"anthropic-beta: {beta}" in headers
    body = json.loads(words[words.index("--data") + 1])
    assert body["context_management"] == {"edits": edits}
    assert body["model"] == "claude-opus-4-6"
    assert ("thinking" in body) == (
        policy in ("anthropic_clear_thinking", "anthropic_context_editing")
    )


@pytest.mark.parametrize(("policy", "params", "edits", "beta"), CASES, ids=IDS)
def test_the_sdk_call_sends_exactly_the_chosen_edits(policy, params, edits, beta):
    request = sent_by(snippets(policy, params)["anthropic-python"].text)
    body = json.loads(request.content)
    assert request.url.path == "/v1/messages"
    assert request.headers["anthropic-beta"] == beta
    assert body["context_management"] == {"edits": edits}
    assert body["model"] == "claude-opus-4-6"


def test_the_thinking_edit_comes_first_when_both_are_chosen():
    params = make_params(AnthropicEditingParams, {"keep_all_thinking": "true", "keep": "1"})
    body = json.loads(
        sent_by(snippets("anthropic_context_editing", params)["anthropic-python"].text).content
    )
    assert [e["type"] for e in body["context_management"]["edits"]] == [
        "clear_thinking_20251015",
        "clear_tool_uses_20250919",
    ]
    assert body["context_management"]["edits"][0]["keep"] == "all"
    assert body["thinking"] == {"type": "adaptive"}  # what the SDK asks of claude-opus-4-6


def test_a_run_of_another_provider_gets_a_claude_model_and_a_note():
    found = snippets("anthropic_compaction", AnthropicCompactionParams(), model="gpt-5")
    body = json.loads(sent_by(found["anthropic-python"].text).content)
    assert body["model"].startswith("claude")
    assert any("gpt-5" in note for note in found["anthropic-python"].notes)


def test_what_the_api_cannot_be_told_is_said_beside_it():
    params = AnthropicCompactionParams(
        trigger=200_000, summary_tokens=5_000, pause_after_compaction=True, preserve_messages=3
    )
    notes = " ".join(
        export("anthropic_compaction", ExportContext(params, 100_000, 150_000))[0].notes
    )
    assert "summary_tokens (5,000)" in notes
    assert "newest 3 messages" in notes
    assert "above the hard limit (150,000)" in notes


def test_every_anthropic_policy_has_an_exporter():
    for name in (
        "anthropic_clear_tool_uses",
        "anthropic_clear_thinking",
        "anthropic_context_editing",
        "anthropic_compaction",
    ):
        assert name in EXPORTERS
