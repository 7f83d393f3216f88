"""SWE-agent export: the YAML parses and round-trips n and polling under
agent.history_processors."""

from __future__ import annotations

import yaml

from contextsim.registry import ExportContext, export
from contextsim.systems.swe_agent.policies import LastNParams


def test_the_history_processor_yaml_round_trips_n_and_polling():
    (snippet,) = export("swe_agent_last_n", ExportContext(LastNParams(n=7, polling=3), 1, 1))
    assert snippet.language == "yaml"
    config = yaml.safe_load(snippet.text)
    assert config == {
        "agent": {"history_processors": [{"type": "last_n_observations", "n": 7, "polling": 3}]}
    }
    assert yaml.safe_load(yaml.safe_dump(config)) == config
