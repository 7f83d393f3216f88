"""claude-trace capture fixtures, one line per case (tests/systems/fixtures.py)."""

from __future__ import annotations

import pytest

from tests.systems.fixtures import imported, refused


@pytest.mark.parametrize(
    ("name", "runs", "warnings"),
    [
        # per run: requests, with usage, largest context, compactions, tool calls
        # three calls of one conversation and a title side call; GET /models skipped
        ("session.jsonl", [(3, 3, 950, 0, 1), (1, 1, 40, 0, 0)], 1),
        # /compact: the summary request extends the session, the next call opens with
        # the summary it wrote: one run, one compaction after it
        ("compact.jsonl", [(3, 3, 5_100, 1, 0)], 0),
        # output only in the stream's output_item.done events
        ("codex_sse.jsonl", [(1, 1, 1_200, 0, 0)], 0),
    ],
)
def test_the_fixture_imports_as(name, runs, warnings):
    assert imported(__file__, name) == ("claude-trace", runs, warnings)


def test_a_stream_that_never_completes_is_refused_naming_where():
    assert refused(__file__, "unfinished_stream.jsonl") == (
        "line 1.response.body_raw: the stream ended before the response was complete"
    )
