"""SWE-agent: the agent's `history_processors` list in its YAML config for
`swe_agent_last_n`.

Source: SWE-agent, sweagent/agent/history_processors.py (LastNObservations: type
"last_n_observations", n, polling) and config/default.yaml (agent.history_processors).
"""

from __future__ import annotations

from contextsim.systems.exporting import ExportContext, Exporter, Snippet
from contextsim.systems.swe_agent.policies import LastNParams


def last_n(ctx: ExportContext) -> tuple[Snippet, ...]:
    params: LastNParams = ctx.params
    text = (
        "agent:\n"
        "  history_processors:\n"
        "    - type: last_n_observations\n"
        f"      n: {params.n}\n"
        f"      polling: {params.polling}\n"
    )
    notes = (
        "Merge into your SWE-agent config (sweagent run --config ...), beside any other "
        "history processors (e.g. cache_control).",
        "Observations tagged keep_output or remove_output are kept or elided whatever "
        "their age; the simulation has no tags.",
    )
    return (Snippet("swe-agent", "SWE-agent config (YAML)", "yaml", text, notes),)


EXPORTS: dict[str, Exporter] = {"swe_agent_last_n": last_n}
