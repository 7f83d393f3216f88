"""Letta exports: the server environment parses back to the chosen summarizer settings;
the letta-client snippet, executed against a mock transport, creates an agent whose
request carries the chosen compaction settings."""

from __future__ import annotations

import json
import shlex
from typing import Any

import httpx
import letta_client

from contextsim.registry import ExportContext, export
from contextsim.systems.letta.policies import LettaSlidingParams, LettaSummarizerParams

AGENT = {"id": "agent-1", "name": "a"}


def _environment(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.startswith("export "):
            key, _, value = shlex.split(line[len("export ") :])[0].partition("=")
            out[key] = value
    return out


def test_the_summarizer_environment_round_trips_the_chosen_settings():
    params = LettaSummarizerParams(
        mode="static_buffer",
        message_buffer_limit=40,
        message_buffer_min=9,
        partial_evict_summarizer_percentage=0.25,
        window=64_000,
    )
    (snippet,) = export("letta_summarizer", ExportContext(params, 100_000, 200_000))
    env = _environment(snippet.text)
    assert env == {
        "LETTA_SUMMARIZER_MODE": "static_message_buffer_mode",
        "LETTA_SUMMARIZER_MESSAGE_BUFFER_LIMIT": "40",
        "LETTA_SUMMARIZER_MESSAGE_BUFFER_MIN": "9",
        "LETTA_SUMMARIZER_PARTIAL_EVICT_SUMMARIZER_PERCENTAGE": "0.25",
    }
    assert any("64,000" in n for n in snippet.notes)


def test_the_default_summarizer_environment_names_letta_s_default_mode():
    (snippet,) = export("letta_summarizer", ExportContext(LettaSummarizerParams(), 1, 1))
    env = _environment(snippet.text)
    assert env["LETTA_SUMMARIZER_MODE"] == "partial_evict_message_buffer_mode"
    assert env["LETTA_SUMMARIZER_PARTIAL_EVICT_SUMMARIZER_PERCENTAGE"] == "0.3"


def test_the_sliding_window_snippet_creates_an_agent_with_the_chosen_percentage(monkeypatch):
    sent: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=AGENT)

    real = letta_client.Letta

    def offline(**kwargs: Any) -> letta_client.Letta:
        client = httpx.Client(transport=httpx.MockTransport(handler))
        return real(api_key="k", http_client=client, **kwargs)

    monkeypatch.setattr(letta_client, "Letta", offline)
    params = LettaSlidingParams(sliding_window_percentage=0.45)
    ctx = ExportContext(params, 100_000, 200_000, model="anthropic/claude-sonnet-4-5")
    (snippet,) = export("letta_sliding_window", ctx)
    exec(snippet.text, {})
    (body,) = sent
    assert body["model"] == "anthropic/claude-sonnet-4-5"
    assert body["compaction_settings"] == {
        "mode": "sliding_window",
        "sliding_window_percentage": 0.45,
    }
