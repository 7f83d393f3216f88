"""OpenHands exports: each config.toml snippet parses (tomllib) to the [condenser]
section OpenHands reads, with the chosen values."""

from __future__ import annotations

import tomllib

from contextsim.registry import ExportContext, export
from contextsim.systems.openhands.policies import ForgettingParams, MaskingParams, SummarizingParams


def toml(policy: str, params: object) -> dict[str, object]:
    (snippet,) = export(policy, ExportContext(params, 1, 1))
    assert snippet.language == "toml"
    return tomllib.loads(snippet.text)


def test_masking_exports_an_observation_masking_condenser():
    parsed = toml("openhands_observation_masking", MaskingParams(attention_window=37))
    assert parsed == {"condenser": {"type": "observation_masking", "attention_window": 37}}


def test_forgetting_exports_an_amortized_condenser():
    parsed = toml("openhands_amortized_forgetting", ForgettingParams(max_size=80, keep_first=3))
    assert parsed == {"condenser": {"type": "amortized", "max_size": 80, "keep_first": 3}}


def test_summarizing_exports_an_llm_condenser_naming_its_llm_section():
    parsed = toml("openhands_llm_summarizing", SummarizingParams(max_size=60, keep_first=2))
    condenser = parsed["condenser"]
    assert condenser == {"type": "llm", "llm_config": "condenser", "max_size": 60, "keep_first": 2}
    assert "condenser" in parsed["llm"]  # the [llm.condenser] section it names
