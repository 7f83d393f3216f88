"""What an OpenHands user can tune: the LLM summarizing condenser's size and first
events kept, and observation masking's attention window."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism


def _summarizing(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("max_size", (20, 40, 60, 80, 100, 150, 200)),
        Dimension("keep_first", (1, 2, 4, 8)),
    )


def _masking(window: int) -> tuple[Dimension, ...]:
    return (Dimension("attention_window", (5, 10, 20, 40, 60, 100, 150)),)


MECHANISMS = (
    Mechanism(
        "llm-summarizing",
        "OpenHands LLMSummarizingCondenser",
        "openhands_llm_summarizing",
        _summarizing,
    ),
    Mechanism(
        "observation-masking",
        "OpenHands ObservationMaskingCondenser",
        "openhands_observation_masking",
        _masking,
    ),
)
