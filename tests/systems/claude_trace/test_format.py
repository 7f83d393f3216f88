"""claude-trace captures: exact requests, responses at their own model, conversations
placed as the capture proxy places them, and the figures of real captures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import reconciliation
from contextsim.ingest.captures import FORMAT
from contextsim.ingest.detect import parse_path
from tests.conftest import corpus_files
from tests.systems.fixtures import fixture


def test_a_capture_is_exact_its_tools_and_system_prompt_are_sent():
    main, title = parse_path(fixture(__file__, "session.jsonl")).runs
    assert main.format == FORMAT and title.title.startswith("Generate a title")
    # The title call is a run of its own, of the same client session.
    assert main.session_id == "5e55-10n0-0001" and title.parent_session_id == main.session_id
    assert [m.role for m in main.messages[:2]] == ["system", "system"]  # tools, prompt
    assert main.messages[-1].usage is not None
    assert main.messages[-1].usage.model == "claude-sonnet-4-5"
    rec = reconciliation(build(main, ESTIMATORS["o200k"]), exact=True)
    assert rec is not None and rec.overhead == 0 and rec.source == "exact"


def _model_calls(path: Path) -> list[dict]:
    calls = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        url, method = record["request"]["url"], record["request"].get("method", "POST")
        route = url.split("?")[0]
        if method == "POST" and route.endswith(("/messages", "/responses")):
            calls.append(record)
    return calls


@pytest.mark.parametrize("path", corpus_files("raw_api", "*.jsonl"))
def test_every_model_call_of_a_real_capture_is_a_measured_request(path: Path):
    calls = _model_calls(path)
    runs = parse_path(path).runs
    measured = [m.usage for run in runs for m in run.messages if m.usage is not None]
    assert len(measured) == len(calls)
    # The Anthropic bodies carry their usage; the Responses streams end in it.
    for call in calls:
        body = call["response"].get("body")
        if isinstance(body, dict) and "usage" in body:
            u = body["usage"]
            context = (
                u.get("input_tokens", 0)
                + (u.get("cache_read_input_tokens") or 0)
                + (u.get("cache_creation_input_tokens") or 0)
            )
            assert context in {m.context for m in measured}
