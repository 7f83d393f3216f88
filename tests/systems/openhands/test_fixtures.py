"""OpenHands fixture files, one line per case (tests/systems/fixtures.py)."""

from __future__ import annotations

import pytest

from tests.systems.fixtures import imported, refused


@pytest.mark.parametrize(
    ("name", "runs", "warnings"),
    [
        # per run: requests, with usage, largest context, compactions, tool calls
        ("two_reads.json", [(2, 2, 1_200, 0, 3)], 1),  # a state change the model never saw
    ],
)
def test_the_fixture_imports_as(name, runs, warnings):
    assert imported(__file__, name) == ("openhands", runs, warnings)


@pytest.mark.parametrize(
    ("name", "format", "error"),
    [
        ("event_without_source.json", "openhands", "$[0].source: expected the event's source"),
    ],
)
def test_the_fixture_is_refused_with(name, format, error):
    assert refused(__file__, name, format).startswith(error)
