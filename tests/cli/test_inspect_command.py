"""`python -m contextsim inspect`: the JSON contract, without Django, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def inspect(*args: str) -> subprocess.CompletedProcess[str]:
    # A fresh interpreter with no Django settings proves the CLI needs no framework.
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, "-m", "contextsim", "inspect", *args, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )


KEYS = {
    "title",
    "model",
    "messages",
    "requests",
    "requests_with_usage",
    "max_measured_context",
    "compactions",
    "tool_calls",
    "subagent",
}


@pytest.mark.parametrize(
    ("name", "fmt", "requests", "peak"),
    [
        ("claude_code/codemie_session-196820da.jsonl", "claude-code", 47, 141_315),
        ("claude_code/ccviewer_fe5e1c67.jsonl", "claude-code", 170, 42_726),
        ("claude_code/ccviewer_5c0375b4.jsonl", "claude-code", 20, None),
        ("openai_chat/inspect_2025-05-12T20-27-36-04-00_browser.json", "inspect-ai", 5, 5_915),
    ],
)
def test_inspect_reports_the_known_figures(corpus: Path, name, fmt, requests, peak):
    result = inspect(str(corpus / name))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["format"] == fmt
    assert all(set(r) == KEYS for r in report["runs"])
    assert sum(r["requests"] for r in report["runs"]) == requests
    if peak is not None:
        assert max(r["max_measured_context"] or 0 for r in report["runs"]) == peak


def test_inspect_counts_codex_usage_events_once(corpus: Path):
    (path,) = (corpus / "codex").glob("localpush_redacted_rollout-*.jsonl")
    (run,) = json.loads(inspect(str(path)).stdout)["runs"]
    assert run["requests_with_usage"] == 286 and run["compactions"] == 1


def test_inspect_splits_inline_subagents_into_runs(corpus: Path):
    runs = json.loads(inspect(str(corpus / "claude_code/ccviewer_fe5e1c67.jsonl")).stdout)["runs"]
    assert [r["subagent"] for r in runs].count(False) == 1 and len(runs) > 1


def test_inspect_of_bad_input_exits_non_zero_with_the_error_on_stderr(tmp_path: Path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"contextsim": 1, "type": "run"}\n{"type": "message", "role": 7}\n')
    result = inspect(str(path))
    assert result.returncode == 2 and result.stdout == ""
    assert f"{path}: line 2, $.role: expected one of system, user, assistant, tool" in result.stderr


def test_inspect_of_an_unknown_format_lists_the_supported_ones(tmp_path: Path):
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    result = inspect(str(path))
    assert result.returncode == 2
    assert (
        "supported formats: native, claude-code, codex, gemini-cli, claude-trace, inspect-ai"
        in result.stderr
    )
