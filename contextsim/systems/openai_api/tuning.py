"""What a user of OpenAI's Responses API (or the Agents SDK) can tune: server-side
compaction's `compact_threshold`, from 40% to 95% of the window; and the Agents SDK's
tool-output trimmer (the recent turns left whole, the longest output kept)."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism, share_steps


def _compaction(window: int) -> tuple[Dimension, ...]:
    return (Dimension("compact_threshold", share_steps(window, 0.40, 0.95, 0.001)),)


def _trimmer(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("recent_turns", tuple(range(1, 11))),
        Dimension(
            "max_output_chars",
            (250, 500, 750, 1_000, 1_500, 2_000, 3_000, 4_000, 5_000, 7_500, 10_000, 20_000),
        ),
    )


MECHANISMS = (
    Mechanism(
        "compaction",
        "OpenAI Responses API compaction (compact_threshold)",
        "openai_compaction",
        _compaction,
    ),
    Mechanism(
        "tool-output-trimmer",
        "OpenAI Agents SDK ToolOutputTrimmer",
        "openai_tool_output_trimmer",
        _trimmer,
    ),
)
