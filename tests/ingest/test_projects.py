"""Each agent's runs carry the folder it worked in, as its log says: Claude Code's first
`cwd` (its subagents' too, though they may work in a folder below), Codex's
`session_meta.cwd`, Gemini CLI's project hash (the only name it keeps of the folder)."""

from __future__ import annotations

import json

import pytest

from contextsim.ingest.detect import parse_path
from tests.conftest import corpus_files, log_entries


@pytest.mark.parametrize("path", corpus_files("claude_code", "*.jsonl"))
def test_a_claude_code_session_is_in_the_folder_it_began_in(path):
    first = next((e["cwd"] for e in log_entries(path) if isinstance(e.get("cwd"), str)), "")
    runs = parse_path(str(path)).runs
    assert first and {r.project for r in runs} == {first}


@pytest.mark.parametrize("path", corpus_files("codex", "*.jsonl"))
def test_a_codex_session_is_in_its_session_metas_folder(path):
    meta = next(e["payload"] for e in log_entries(path) if e.get("type") == "session_meta")
    assert {r.project for r in parse_path(str(path)).runs} == {meta["cwd"]}


@pytest.mark.parametrize("path", corpus_files("gemini_cli", "*"))
def test_a_gemini_cli_session_is_named_by_its_project_hash(path):
    text = path.read_text()
    try:
        header = json.loads(text)
    except ValueError:  # JSONL: the first line holds the header
        header = json.loads(text.splitlines()[0])
    expected = f"project {header['projectHash'][:12]}"
    assert {r.project for r in parse_path(str(path)).runs} == {expected}
