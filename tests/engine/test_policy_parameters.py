"""Parameters the real systems refuse are refused by their policies, naming them."""

from __future__ import annotations

import pytest

from contextsim.systems.adk.policies import AdkParams
from contextsim.systems.inspect_ai.policies import InspectParams
from contextsim.systems.letta.policies import LettaSummarizerParams
from tests.engine.hand_made import (
    rounds,
    sim,
    task,
)


@pytest.mark.parametrize(
    ("policy", "params", "message"),
    [
        ("swe_agent_last_n", {"n": 0}, "n and polling must be at least 1"),
        ("openhands_observation_masking", {"attention_window": 0}, "attention_window"),
        ("openai_tool_output_trimmer", {"recent_turns": 0}, "recent_turns"),
        ("openhands_llm_summarizing", {"max_size": 3}, "max_size must be at least 4"),
    ],
)
def test_bad_parameters_are_refused_naming_them(policy, params, message):
    with pytest.raises(ValueError, match=message):
        sim(policy, task(*rounds(2)), **params)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (lambda: AdkParams(compaction_interval=2, overlap_size=None), "set together"),
        (lambda: AdkParams(None, None), "set compaction_interval"),
        (lambda: LettaSummarizerParams(mode="sliding"), "mode"),
        (lambda: InspectParams(strategy="native"), "strategy"),
        (lambda: InspectParams(preserve=1.5), "preserve"),
    ],
)
def test_parameters_the_real_systems_refuse_are_refused(params, message):
    with pytest.raises(ValueError, match=message):
        params()
