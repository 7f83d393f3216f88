"""Google ADK: the App's `events_compaction_config` (EventsCompactionConfig) for
`adk_events_compaction`.

Source: google-adk 2.13.0, google/adk/apps/app.py (App, events_compaction_config) and
google/adk/apps/_configs.py (EventsCompactionConfig: compaction_interval, overlap_size,
token_threshold, event_retention_size, summarizer).
"""

from __future__ import annotations

from contextsim.systems.adk.policies import AdkParams
from contextsim.systems.exporting import ExportContext, Exporter, Snippet


def events_compaction(ctx: ExportContext) -> tuple[Snippet, ...]:
    params: AdkParams = ctx.params
    fields = [
        ("compaction_interval", params.compaction_interval),
        ("overlap_size", params.overlap_size),
        ("token_threshold", params.token_threshold),
        ("event_retention_size", params.event_retention_size),
    ]
    arguments = "".join(f"        {k}={v},\n" for k, v in fields if v is not None)
    python = (
        "from google.adk.agents import LlmAgent\n"
        "from google.adk.apps.app import App, EventsCompactionConfig\n"
        "\n"
        'root_agent = LlmAgent(name="assistant", model="gemini-2.5-flash")\n'
        "app = App(\n"
        '    name="my_app",\n'
        "    root_agent=root_agent,\n"
        "    events_compaction_config=EventsCompactionConfig(\n"
        f"{arguments}"
        "    ),\n"
        ")\n"
    )
    notes = (
        f"summary_tokens ({params.summary_tokens:,}) cannot be set: each summary is what "
        "the summarizer (the agent's model by default) writes.",
        "Compaction runs in the Runner (post-invocation) and before model requests "
        "(token threshold): run the app with a Runner built from `app`.",
    )
    return (Snippet("google-adk", "Google ADK App", "python", python, notes),)


EXPORTS: dict[str, Exporter] = {"adk_events_compaction": events_compaction}
