"""OpenHands: the `[condenser]` section of its config.toml for the condensers
`openhands_observation_masking`, `openhands_amortized_forgetting` and
`openhands_llm_summarizing`.

Source: OpenHands, openhands/core/config/condenser_config.py (type values
"observation_masking", "amortized", "llm"; attention_window, max_size, keep_first,
llm_config naming an [llm.<name>] section; condenser_config_from_toml_section).
"""

from __future__ import annotations

from contextsim.systems.exporting import ExportContext, Exporter, Snippet
from contextsim.systems.openhands.policies import ForgettingParams, MaskingParams, SummarizingParams

LABEL = "OpenHands config.toml"
EVENTS = (
    "OpenHands counts events (actions and observations); the simulation counts a "
    "message as one event."
)


def masking(ctx: ExportContext) -> tuple[Snippet, ...]:
    params: MaskingParams = ctx.params
    text = (
        f'[condenser]\ntype = "observation_masking"\nattention_window = {params.attention_window}\n'
    )
    return (Snippet("openhands", LABEL, "toml", text, (EVENTS,)),)


def forgetting(ctx: ExportContext) -> tuple[Snippet, ...]:
    params: ForgettingParams = ctx.params
    text = (
        "[condenser]\n"
        'type = "amortized"\n'
        f"max_size = {params.max_size}\n"
        f"keep_first = {params.keep_first}\n"
    )
    return (Snippet("openhands", LABEL, "toml", text, (EVENTS,)),)


def summarizing(ctx: ExportContext) -> tuple[Snippet, ...]:
    params: SummarizingParams = ctx.params
    text = (
        "[condenser]\n"
        'type = "llm"\n'
        'llm_config = "condenser"\n'
        f"max_size = {params.max_size}\n"
        f"keep_first = {params.keep_first}\n"
        "\n"
        "[llm.condenser]\n"
        'model = "gpt-4o-mini"\n'
    )
    notes = (
        EVENTS,
        f"summary_tokens ({params.summary_tokens:,}) cannot be set: the summary is what "
        "the [llm.condenser] model writes (choose your own model there).",
    )
    return (Snippet("openhands", LABEL, "toml", text, notes),)


EXPORTS: dict[str, Exporter] = {
    "openhands_observation_masking": masking,
    "openhands_amortized_forgetting": forgetting,
    "openhands_llm_summarizing": summarizing,
}
