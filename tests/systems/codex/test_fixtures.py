"""Codex CLI's fixture files, one line per case (tests/systems/fixtures.py)."""

from __future__ import annotations

import pytest

from tests.systems.fixtures import imported


@pytest.mark.parametrize(
    ("name", "runs"),
    [
        # per run: requests, with usage, largest context, compactions, tool calls
        ("one_turn.jsonl", [(1, 1, 9_000, 0, 0)]),
        ("tool_call.jsonl", [(2, 2, 9_800, 0, 1)]),  # a repeated token_count counts once
        ("compacted.jsonl", [(2, 2, 240_000, 1, 0)]),
    ],
)
def test_the_fixture_imports_as(name, runs):
    assert imported(__file__, name) == ("codex", runs, 0)
