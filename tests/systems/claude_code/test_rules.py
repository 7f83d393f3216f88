"""Claude Code's window and threshold per model and version, and what a log reveals."""

from __future__ import annotations

import pytest

from contextsim.model import Compaction
from contextsim.systems.claude_code.rules import keeps_thinking, session_window, threshold_for

AUTO = (Compaction(10, 168_000, "auto"),)
MANUAL = (Compaction(10, 158_000, "manual"),)


@pytest.mark.parametrize(
    "version, threshold",
    [("2.0.76", 155_000), ("2.1.29", 167_000), ("2.1.141", 167_000), ("", 167_000)],
)
def test_the_threshold_reserves_all_output_before_2_1_and_20000_after(version, threshold):
    assert threshold_for(200_000, version) == threshold


@pytest.mark.parametrize(
    "model, version, peak, compactions, tokens, says",
    [
        ("claude-sonnet-4-6", "2.1.90", 150_000, (), 200_000, "default"),
        ("claude-sonnet-4-6[1m]", "2.1.90", 10_000, (), 1_000_000, "asks for 1M"),
        ("claude-opus-4-7", "2.1.117", 10_000, (), 1_000_000, "runs claude-opus-4-7 on 1M"),
        ("claude-opus-4-7", "2.1.116", 10_000, (), 200_000, "default"),
        ("claude-opus-4-6", "2.1.90", 248_633, (), 1_000_000, "a request of 248,633"),
        # Past the version's threshold without compacting: still 200k (the threshold
        # was higher: policies.claude_code_threshold), unless a request passed 200k.
        ("claude-sonnet-4-6", "2.1.141", 185_603, (), 200_000, "default"),
        ("claude-sonnet-4-6", "2.1.141", 185_603, AUTO, 200_000, "default"),
        ("claude-opus-4-5", "2.1.2", 157_638, MANUAL, 200_000, "default"),
    ],
)
def test_the_window_and_its_source(model, version, peak, compactions, tokens, says):
    window = session_window(model, version, peak, compactions)
    assert window.tokens == tokens and says in window.source


@pytest.mark.parametrize(
    "model, kept",
    [
        ("claude-sonnet-4-5-20250929", False),
        ("claude-sonnet-4-20250514", False),
        ("claude-haiku-4-5-20251001", False),
        ("claude-opus-4-5-20251101", True),
        ("claude-sonnet-4-6", True),
        ("claude-opus-4-7", True),
    ],
)
def test_which_models_read_earlier_turns_thinking(model, kept):
    assert keeps_thinking(model) is kept
