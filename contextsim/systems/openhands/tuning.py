"""What an OpenHands user can tune: the LLM summarizing condenser's size and first
events kept, and observation masking's attention window."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism


def _summarizing(window: int) -> tuple[Dimension, ...]:
    return (
        Dimension("max_size", tuple(range(20, 201, 10))),
        Dimension("keep_first", tuple(range(1, 9))),
    )


def _masking(window: int) -> tuple[Dimension, ...]:
    return (Dimension("attention_window", tuple(range(5, 151, 5))),)


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
