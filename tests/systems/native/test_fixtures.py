"""The native format's fixture files, one line per case (tests/systems/fixtures.py)."""

from __future__ import annotations

import pytest

from tests.systems.fixtures import imported, refused


@pytest.mark.parametrize(
    ("name", "runs"),
    [
        # per run: requests, with usage, largest context, compactions, tool calls
        ("two_requests.jsonl", [(2, 2, 1_050, 0, 1)]),
        ("document.json", [(1, 0, None, 0, 0), (1, 0, None, 0, 0)]),
    ],
)
def test_the_fixture_imports_as(name, runs):
    assert imported(__file__, name) == ("native", runs, 0)


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("wrong_version.json", "$.contextsim: unsupported contextsim version 7; expected 1"),
    ],
)
def test_the_fixture_is_refused_with(name, error):
    assert refused(__file__, name) == error
