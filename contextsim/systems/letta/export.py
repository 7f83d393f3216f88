"""Letta: the summarizer settings of its server (environment variables read by
`SummarizerSettings`, prefix LETTA_SUMMARIZER_) for `letta_summarizer`, and an agent's
`compaction_settings` (letta-client's `client.agents.create(...)`) for
`letta_sliding_window`.

Sources: letta 0.16.8, letta/settings.py (SummarizerSettings, its env prefix, the mode
values of letta/services/summarizer/enums.py) and summarizer_config.py
(CompactionSettings); letta-client 1.12.1, letta_client/types/agent_create_params.py
(compaction_settings: mode, sliding_window_percentage, clip_chars, ...).
"""

from __future__ import annotations

from contextsim.systems.exporting import ExportContext, Exporter, Snippet
from contextsim.systems.letta.policies import LettaSlidingParams, LettaSummarizerParams

MODE_VALUES = {
    "partial_evict": "partial_evict_message_buffer_mode",
    "static_buffer": "static_message_buffer_mode",
}
"""Our mode -> Letta's SummarizationMode value."""
DEFAULT_MODEL = "openai/gpt-4.1"


def _window_note(window: int | None) -> tuple[str, ...]:
    if window is None:
        return ()
    return (
        f"window ({window:,}) is the agent's model setting, not the summarizer's: set "
        "the agent's llm_config context_window (or its model's) to it.",
    )


def summarizer(ctx: ExportContext) -> tuple[Snippet, ...]:
    """The Letta server's environment for the older agent loop's Summarizer."""
    params: LettaSummarizerParams = ctx.params
    text = (
        "# Letta server environment (SummarizerSettings), before `letta server`\n"
        f"export LETTA_SUMMARIZER_MODE={MODE_VALUES[params.mode]}\n"
        f"export LETTA_SUMMARIZER_MESSAGE_BUFFER_LIMIT={params.message_buffer_limit}\n"
        f"export LETTA_SUMMARIZER_MESSAGE_BUFFER_MIN={params.message_buffer_min}\n"
        "export LETTA_SUMMARIZER_PARTIAL_EVICT_SUMMARIZER_PERCENTAGE="
        f"{params.partial_evict_summarizer_percentage}\n"
    )
    notes = (
        "These settings drive the Summarizer of Letta's older agent loop (LettaAgent); "
        "agents on the current loop compact with compaction_settings instead (see "
        "letta_sliding_window).",
        f"summary_tokens ({params.summary_tokens:,}) cannot be set: the summary is what "
        "the model writes.",
        *_window_note(params.window),
    )
    return (Snippet("letta-server", "Letta server environment", "sh", text, notes),)


def sliding_window(ctx: ExportContext) -> tuple[Snippet, ...]:
    """An agent created with sliding-window compaction settings (letta-client)."""
    params: LettaSlidingParams = ctx.params
    model = ctx.model if "/" in ctx.model else DEFAULT_MODEL
    python = (
        "from letta_client import Letta\n"
        "\n"
        'client = Letta(base_url="http://localhost:8283")\n'
        "agent = client.agents.create(\n"
        f'    model="{model}",\n'
        "    compaction_settings={\n"
        '        "mode": "sliding_window",\n'
        f'        "sliding_window_percentage": {params.sliding_window_percentage},\n'
        "    },\n"
        ")\n"
    )
    notes = (
        "Letta compacts once a step's tokens exceed 90% of the model's window "
        "(SUMMARIZATION_TRIGGER_MULTIPLIER, not configurable).",
        f"summary_tokens ({params.summary_tokens:,}) cannot be set: the summary is what "
        "the model writes (clipped at clip_chars, 50,000 characters by default).",
        *_window_note(params.window),
        *(
            ()
            if "/" in ctx.model
            else (f'model: a Letta handle ("provider/model"); {DEFAULT_MODEL} stands in.',)
        ),
    )
    return (Snippet("letta-client", "Letta agent (letta-client)", "python", python, notes),)


EXPORTS: dict[str, Exporter] = {
    "letta_summarizer": summarizer,
    "letta_sliding_window": sliding_window,
}
