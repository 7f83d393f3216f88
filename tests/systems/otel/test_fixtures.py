"""OpenTelemetry fixture files, one line per case (tests/systems/fixtures.py)."""

from __future__ import annotations

import pytest

from tests.systems.fixtures import imported, refused


@pytest.mark.parametrize(
    ("name", "runs"),
    [
        # per run: requests, with usage, largest context, compactions, tool calls
        ("genai_spans.json", [(2, 2, 1_300, 0, 1)]),  # input tokens include the cached ones
    ],
)
def test_the_fixture_imports_as(name, runs):
    assert imported(__file__, name) == ("otel", runs, 0)


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("no_model_calls.json", "$: expected GenAI model call spans, found none"),
    ],
)
def test_the_fixture_is_refused_with(name, error):
    assert refused(__file__, name) == error
