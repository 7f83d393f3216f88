"""LangChain fixture files, one line per case (tests/systems/fixtures.py). The dump was
written by langchain_core's own messages_to_dict."""

from __future__ import annotations

import pytest

from tests.systems.fixtures import imported


@pytest.mark.parametrize(
    ("name", "runs"),
    [
        # per run: requests, with usage, largest context, compactions, tool calls
        ("messages_to_dict.json", [(2, 2, 2_100, 0, 1)]),
    ],
)
def test_the_fixture_imports_as(name, runs):
    assert imported(__file__, name) == ("langchain", runs, 0)
