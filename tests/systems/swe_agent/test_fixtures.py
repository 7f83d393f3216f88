"""SWE-agent fixture files, one line per case (tests/systems/fixtures.py)."""

from __future__ import annotations

import pytest

from tests.systems.fixtures import imported


@pytest.mark.parametrize(
    ("name", "runs", "warnings"),
    [
        # per run: requests, with usage, largest context, compactions, tool calls
        ("text_actions.traj", [(2, 0, None, 0, 2)], 1),  # only the totals were logged
        ("function_calls.traj", [(2, 0, None, 0, 2)], 0),
    ],
)
def test_the_fixture_imports_as(name, runs, warnings):
    assert imported(__file__, name) == ("swe-agent", runs, warnings)
