"""Inspect AI fixture files, one line per case (tests/systems/fixtures.py)."""

from __future__ import annotations

import pytest

from tests.systems.fixtures import imported


@pytest.mark.parametrize(
    ("name", "runs"),
    [
        # per run (one per sample): requests, with usage, largest context, compactions, tool calls
        ("two_samples.json", [(2, 2, 960, 0, 1), (1, 1, 400, 0, 0)]),
    ],
)
def test_the_fixture_imports_as(name, runs):
    assert imported(__file__, name) == ("inspect-ai", runs, 0)
