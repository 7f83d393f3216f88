"""A format chosen by hand: another format's file is refused with the reason, so is a
file in which the chosen importer finds nothing; broken JSON names its line and column."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from contextsim.ingest.base import FormatError
from contextsim.ingest.detect import parse_path, parse_stream

USER = {"type": "user", "sessionId": "abc", "message": {"role": "user", "content": "hi"}}


def _lines(*records: dict) -> bytes:
    return "\n".join(json.dumps(r) for r in records).encode() + b"\n"


def test_a_claude_code_session_forced_as_codex_is_refused_naming_what_it_is(corpus: Path):
    path = corpus / "claude_code" / "ccviewer_5c0375b4.jsonl"
    with pytest.raises(FormatError) as err:
        parse_path(path, "codex")
    message = str(err.value)
    assert "not a Codex CLI rollout JSONL file" in message
    assert "reads as Claude Code session JSONL (format 'claude-code')" in message
    assert parse_path(path, "claude-code").runs  # the right choice still works


def test_a_file_the_chosen_importer_finds_nothing_in_is_refused():
    data = _lines({"kind": "metric", "value": 1}, {"kind": "metric", "value": 2})
    with pytest.raises(FormatError) as err:
        parse_stream("metrics.jsonl", io.BytesIO(data), "codex")
    assert "nothing in it is Codex CLI rollout JSONL: no messages were found" in str(err.value)


def test_broken_json_is_reported_at_its_own_line_and_column():
    good = json.dumps(USER)
    bad = good.replace('"role": "user"', '"role" "user"')
    column = bad.index('"user"', bad.index('"role"') + 6) + 1
    with pytest.raises(FormatError) as err:
        parse_stream("s.jsonl", io.BytesIO(f"{good}\n{bad}\n{good}\n".encode()))
    assert f"line 2: invalid JSON (Expecting ':' delimiter at column {column})" in str(err.value)
    assert column > 1


def test_a_chat_with_no_usage_model_or_tool_results_is_read_with_a_warning(tmp_path):
    # A Cursor agent transcript: roles and text, nothing measured.
    path = tmp_path / "transcript.json"
    path.write_text(
        '[{"role": "user", "content": "fix it"}, {"role": "assistant", "content": "done"}]'
    )
    parsed = parse_path(path)
    assert parsed.runs and any("nothing in it can be checked" in w for w in parsed.warnings)
    measured = tmp_path / "measured.json"
    measured.write_text('{"model": "gpt-4o", "messages": [{"role": "user", "content": "fix it"}]}')
    assert not any("nothing in it can be checked" in w for w in parse_path(measured).warnings)
