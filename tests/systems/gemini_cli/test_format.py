"""Gemini CLI recordings: usage per response at its own model, thoughts sent within
their turn, the last record of an id, and the figures of real recordings."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from contextsim.ingest.detect import parse_path
from contextsim.model import ThinkingPart, ToolResultPart, Usage
from tests.conftest import corpus_files
from tests.systems.fixtures import fixture


def test_a_response_is_its_last_record_with_its_calls_results_and_usage():
    (run,) = parse_path(fixture(__file__, "recording.jsonl")).runs
    assert [m.role for m in run.messages] == ["user", "assistant", "tool", "assistant"]
    first = run.messages[1]
    thought = first.parts[0]
    assert isinstance(thought, ThinkingPart)
    assert (thought.sent_tokens, thought.turn_only) == (300, True)
    assert [c.name for c in first.tool_calls] == ["read_file"]
    assert run.messages[2].parts == (ToolResultPart("c1", "# Helo world\n"),)
    # input includes cached; thoughts are billed as output; each response its model.
    assert first.usage == Usage(9_000, 0, 0, 340, model="gemini-2.5-pro")
    assert run.messages[3].usage == Usage(1_500, 8_000, 0, 20, model="gemini-2.5-flash")
    assert run.context_window == 1_048_576 and "Gemini CLI" in run.window_source


def _responses(path: Path) -> list[dict]:
    """The last record of each gemini id, read straight from the file."""
    text = path.read_text()
    try:
        records = json.loads(text)["messages"]
    except ValueError:
        records = [json.loads(line) for line in text.splitlines()]
    last: dict[str, dict] = {}
    for record in records:
        if record.get("type") == "gemini":
            last[record["id"]] = record
    return list(last.values())


@pytest.mark.parametrize("path", corpus_files("gemini_cli", "*.json*"))
def test_a_real_recordings_usage_is_read_as_logged(path: Path):
    responses = _responses(path)
    (run,) = parse_path(path).runs
    measured = [m.usage for m in run.messages if m.usage is not None]
    assert [u.context for u in measured] == [r["tokens"]["input"] for r in responses]
    assert [u.cache_read for u in measured] == [r["tokens"]["cached"] for r in responses]
    assert [u.output_tokens for u in measured] == [
        r["tokens"]["output"] + r["tokens"]["thoughts"] for r in responses
    ]
    assert [u.model for u in measured] == [r["model"] for r in responses]
    calls = sum(len(r.get("toolCalls") or []) for r in responses)
    assert sum(len(m.tool_calls) for m in run.messages) == calls


@pytest.mark.parametrize("path", corpus_files("gemini_cli", "*.json*"))
def test_responses_with_nothing_recorded_between_them_are_said(path: Path):
    responses = _responses(path)
    text = path.read_text()
    try:
        records = json.loads(text)["messages"]
    except ValueError:
        records = [json.loads(line) for line in text.splitlines()]
    kinds = [r.get("type") for r in records if r.get("type") in ("user", "gemini")]
    ids = [r.get("id") for r in records if r.get("type") in ("user", "gemini")]
    # Consecutive distinct responses, none with calls: nothing recorded between them.
    order = list(dict.fromkeys(zip(ids, kinds, strict=True)))
    calls = {r["id"] for r in responses if r.get("toolCalls")}
    gaps = sum(1 for (a, ka), (_, kb) in pairwise(order) if ka == kb == "gemini" and a not in calls)
    warnings = parse_path(path).warnings
    said = [w for w in warnings if "nothing recorded between them" in w]
    assert bool(said) == bool(gaps)
    if gaps:
        assert f"{gaps} response(s) follow another" in said[0]
