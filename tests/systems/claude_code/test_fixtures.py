"""Claude Code's fixture files, one line per case (tests/systems/fixtures.py)."""

from __future__ import annotations

import pytest

from contextsim.ingest.detect import parse_path
from tests.systems.fixtures import fixture, imported, refused


@pytest.mark.parametrize(
    ("name", "runs"),
    [
        # per run: requests, with usage, largest context, compactions, tool calls
        ("one_answer.jsonl", [(1, 1, 13_510, 0, 0)]),
        ("split_response.jsonl", [(2, 2, 12_396, 0, 1)]),
        ("compacted.jsonl", [(2, 2, 165_002, 1, 0)]),
        ("inline_subagent.jsonl", [(2, 2, 14_465, 0, 1), (1, 1, 3_208, 0, 0)]),
    ],
)
def test_the_fixture_imports_as(name, runs):
    assert imported(__file__, name) == ("claude-code", runs, 0)


def test_an_inline_subagent_is_a_run_of_its_own_in_its_sessions_tree():
    main, sub = parse_path(fixture(__file__, "inline_subagent.jsonl")).runs
    assert (main.subagent, sub.subagent) == (False, True)
    assert sub.parent_session_id == main.session_id


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("broken_line.jsonl", "line 2: invalid JSON (Invalid control character at"),
    ],
)
def test_the_fixture_is_refused_with(name, error):
    assert refused(__file__, name).startswith(error)


def test_the_requests_the_provider_refused_are_the_runs_rejections():
    (run,) = parse_path(fixture(__file__, "api_errors.jsonl")).runs
    too_long, limited = run.rejections
    # Each stands where the error line is: the request whose history ends before it.
    assert [run.messages[r.before_message].role for r in run.rejections] == ["assistant"] * 2
    assert run.messages[too_long.before_message].usage is None
    assert (too_long.reason, too_long.overflow) == ("invalid_request 400: Prompt is too long", True)
    assert (limited.reason, limited.overflow) == (
        "rate_limit 429: API Error: 429 rate limited",
        False,
    )
    assert too_long.time is not None and too_long.time < limited.time
