"""Anthropic Messages API fixture files, one line per case (tests/systems/fixtures.py)."""

from __future__ import annotations

import pytest

from tests.systems.fixtures import imported


@pytest.mark.parametrize(
    ("name", "runs"),
    [
        # per run: requests, with usage, largest context, compactions, tool calls
        ("pairs.json", [(2, 2, 3_100, 0, 1)]),
        ("pairs.jsonl", [(2, 2, 3_100, 0, 1)]),
        ("request_body.json", [(2, 0, None, 0, 1)]),  # the body's own request is pending
    ],
)
def test_the_fixture_imports_as(name, runs):
    assert imported(__file__, name) == ("anthropic", runs, 0)
