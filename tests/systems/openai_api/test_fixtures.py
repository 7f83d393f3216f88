"""OpenAI Chat Completions fixture files, one line per case (tests/systems/fixtures.py)."""

from __future__ import annotations

import pytest

from tests.systems.fixtures import imported, refused


@pytest.mark.parametrize(
    ("name", "runs"),
    [
        # per run: requests, with usage, largest context, compactions, tool calls
        ("pairs.jsonl", [(2, 2, 1_560, 0, 1)]),  # prompt_tokens include the cached ones
        ("messages.json", [(2, 0, None, 0, 1)]),
    ],
)
def test_the_fixture_imports_as(name, runs):
    assert imported(__file__, name) == ("openai", runs, 0)


@pytest.mark.parametrize(
    ("name", "format", "error"),
    [
        ("role_missing.json", None, "could not recognise the log format; supported formats:"),
        ("role_missing.json", "openai", "$[1].role: expected system, developer, user, assistant"),
    ],
)
def test_the_fixture_is_refused_with(name, format, error):
    assert refused(__file__, name, format).startswith(error)
