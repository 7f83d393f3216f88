"""Gemini CLI's fixture files, one line per case (tests/systems/fixtures.py)."""

from __future__ import annotations

import pytest

from tests.systems.fixtures import imported, refused


@pytest.mark.parametrize(
    ("name", "runs", "warnings"),
    [
        # per run: requests, with usage, largest context, compactions, tool calls
        ("document.json", [(2, 2, 9_500, 0, 1)], 1),  # two models: one warning
        ("document_kind.json", [(2, 2, 9_500, 0, 1)], 2),  # and an info record skipped
        ("document_odd_type.json", [(2, 2, 9_500, 0, 1)], 2),  # a type that is a list: skipped
        ("recording.jsonl", [(2, 2, 9_500, 0, 1)], 2),  # g1 written twice: the last wins
    ],
)
def test_the_fixture_imports_as(name, runs, warnings):
    assert imported(__file__, name) == ("gemini-cli", runs, warnings)


def test_cached_tokens_above_the_input_are_refused_naming_where():
    assert refused(__file__, "cached_over_input.json") == (
        "$.messages[0].tokens.cached: expected at most 'input' tokens"
    )


def test_an_api_error_record_is_a_rejection_and_a_tools_error_is_not():
    from contextsim.ingest.detect import parse_path
    from tests.systems.fixtures import fixture

    (run,) = parse_path(fixture(__file__, "api_error.jsonl")).runs
    (refused,) = run.rejections
    assert refused.before_message == len(run.messages) == 3  # after the second user turn
    assert refused.overflow and refused.reason.startswith("[API Error: The input token count")
