"""Inspect AI eval logs: one run per sample, read from the exact calls the log recorded."""

from __future__ import annotations

import json
from typing import Any

from contextsim.cli.main import run_summary
from contextsim.ingest.base import read_source
from contextsim.model import ToolResultPart, steps
from contextsim.systems.anthropic_api.format import AnthropicImporter
from contextsim.systems.inspect_ai.format import InspectImporter
from contextsim.systems.openai_api.format import OpenAIImporter
from tests.systems.openai_api.test_format import CALL, CALL_ECHO, response, source

OPENAI = OpenAIImporter()
INSPECT = InspectImporter()


def inspect_log() -> dict[str, Any]:
    request = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "attachment://aa11"}],
        "tools": [],
    }
    second = {
        **request,
        "messages": [
            *request["messages"],
            CALL_ECHO,
            {"role": "tool", "tool_call_id": "c1", "content": "attachment://bb22"},
        ],
    }
    final = {"role": "assistant", "content": "attachment://cc33", "tool_calls": None}
    events = [
        {"event": "sample_init"},
        {
            "event": "model",
            "model": "openai/gpt-4o-mini",
            "call": {"request": request, "response": response(CALL, 100)},
        },
        {"event": "tool"},
        {
            "event": "model",
            "call": {"request": second, "response": response(final, 180, cached=64)},
        },
    ]
    attachments = {"aa11": "Summarize the page", "bb22": "page text", "cc33": "A summary."}
    sample = {"id": 7, "epoch": 1, "uuid": "u-7", "events": events, "attachments": attachments}
    return {
        "version": 2,
        "eval": {"task": "browse", "model": "openai/gpt-4o-mini"},
        "samples": [sample],
    }


def test_inspect_log_resolves_attachments_and_keeps_usage_per_model_event():
    assert INSPECT.sniff(source(inspect_log())) and not OPENAI.sniff(source(inspect_log()))
    (run,) = INSPECT.parse(source(inspect_log())).runs
    assert run.title == "browse sample 7"
    assert run.session_id == "u-7"
    assert run.model == "gpt-4o-mini"
    assert [m.text for m in run.messages] == ["Summarize the page", "", "", "A summary."]
    assert run.messages[2].parts == (ToolResultPart("c1", "page text"),)
    assert [m.usage.context for m in run.messages if m.usage] == [100, 180]
    assert run.messages[3].source == "$.samples[0].events[3].call.response.choices[0].message"


def test_inspect_corpus_log_has_five_measured_requests(corpus):
    path = corpus / "openai_chat" / "inspect_2025-05-12T20-27-36-04-00_browser.json"
    with path.open("rb") as stream:
        src = read_source(str(path), stream)
    assert INSPECT.sniff(src) and not OPENAI.sniff(src) and not AnthropicImporter().sniff(src)
    parsed = INSPECT.parse(src)
    (run,) = parsed.runs
    assert parsed.warnings == ()
    assert [s.usage.context for s in steps(run) if s.usage] == [1124, 1568, 2732, 3896, 5915]
    summary = run_summary(run)
    assert summary["requests"] == summary["requests_with_usage"] == 5
    assert summary["max_measured_context"] == 5915
    assert summary["tool_calls"] == 4
    # The request's 8 tool schemas are sent, so they are counted: a "tools" message first.
    tools = run.messages[0]
    assert tools.kind == "tools" and len(tools.parts) == 8
    with path.open() as f:
        request = json.load(f)["samples"][0]["events"]
    names = {
        t["function"]["name"]
        for e in request
        if e.get("event") == "model"
        for t in e["call"]["request"]["tools"]
    }
    assert {p.name for p in tools.parts} == names
    assert run.messages[1].text.startswith("Use the web browser tool")
