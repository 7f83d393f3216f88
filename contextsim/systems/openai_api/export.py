"""OpenAI: the Responses API's `truncation` and `context_management` request fields
(as JSON, as a call of the openai Python SDK, as the Agents SDK's ModelSettings) and
the OpenAI Agents SDK's ToolOutputTrimmer.

Sources: the openai Python SDK 3.57.0 (responses.create: `truncation`,
`context_management`), openai-agents 0.24.0 (agents/model_settings.py ModelSettings;
agents/extensions/tool_output_trimmer.py ToolOutputTrimmer and its parameters).
"""

from __future__ import annotations

import json

from contextsim.systems.exporting import ExportContext, Exporter, Snippet
from contextsim.systems.openai_api.policies import CompactionParams, TrimmerParams, TruncationParams

OPENAI_PREFIXES = ("gpt-", "o1", "o3", "o4", "codex-", "chatgpt-", "computer-use")
DEFAULT_MODEL = "gpt-5"


def model_name(ctx: ExportContext) -> tuple[str, tuple[str, ...]]:
    """The model the snippet names: the run's when it is an OpenAI model, else
    DEFAULT_MODEL, with a note saying so."""
    if ctx.model.startswith(OPENAI_PREFIXES):
        return ctx.model, ()
    if ctx.model:
        note = (
            f"The run's model ({ctx.model}) is not an OpenAI model: {DEFAULT_MODEL} is "
            "written in its place; use the model whose window you simulated."
        )
        return DEFAULT_MODEL, (note,)
    return DEFAULT_MODEL, ()


def _responses_snippets(
    ctx: ExportContext, field: str, value: object, notes: tuple[str, ...]
) -> tuple[Snippet, ...]:
    """One Responses request field as JSON, as the openai SDK's call and as the Agents
    SDK's ModelSettings, all three naming `model`."""
    model, model_notes = model_name(ctx)
    notes = (*model_notes, *notes)
    body = json.dumps({"model": model, field: value}, indent=2)
    literal = json.dumps(value)  # JSON of strings, ints, lists and dicts is Python too
    python = (
        "from openai import OpenAI\n"
        "\n"
        "client = OpenAI()\n"
        'history = [{"role": "user", "content": "Hello"}]  # every input item so far\n'
        "response = client.responses.create(\n"
        f"    model={json.dumps(model)},\n"
        "    input=history,\n"
        f"    {field}={literal},\n"
        ")\n"
    )
    agents = (
        "from agents import Agent, ModelSettings\n"
        "\n"
        "agent = Agent(\n"
        '    name="Assistant",\n'
        f"    model={json.dumps(model)},\n"
        f"    model_settings=ModelSettings({field}={literal}),\n"
        ")\n"
    )
    return (
        Snippet("openai-responses", "Responses API request (JSON fields)", "json", body, notes),
        Snippet("openai-python", "openai Python SDK", "python", python, notes),
        Snippet("openai-agents", "OpenAI Agents SDK (ModelSettings)", "python", agents, notes),
    )


def truncation(ctx: ExportContext) -> tuple[Snippet, ...]:
    """`truncation: "auto"`: the window is the model's; nothing else can be set."""
    params: TruncationParams = ctx.params
    notes = [
        f"The API truncates at the model's own context window: the simulation used the "
        f"hard limit, {ctx.hard_limit:,} tokens; pick a model whose window that is.",
    ]
    if params.reserved_output:
        notes.append(
            f"reserved_output ({params.reserved_output:,}) cannot be set: the API decides "
            "on its own, per model, whether it keeps the maximum output free."
        )
    return _responses_snippets(ctx, "truncation", "auto", tuple(notes))


def compaction(ctx: ExportContext) -> tuple[Snippet, ...]:
    """`context_management: [{"type": "compaction", "compact_threshold": N}]`."""
    params: CompactionParams = ctx.params
    value = [{"type": "compaction", "compact_threshold": params.compact_threshold}]
    notes = (
        f"compacted_tokens ({params.compacted_tokens:,}) cannot be set: the size of the "
        "compaction item is the server's (the simulation's is an assumption).",
        "Append each response's output items, the compaction item among them, to the "
        "next request's input (or chain with previous_response_id): the simulation "
        "assumes the server goes on from the latest compaction item.",
    )
    return _responses_snippets(ctx, "context_management", value, notes)


def tool_output_trimmer(ctx: ExportContext) -> tuple[Snippet, ...]:
    """The Agents SDK's ToolOutputTrimmer as a RunConfig's call_model_input_filter."""
    params: TrimmerParams = ctx.params
    names = sorted(set(params.trimmable_tools))
    tools = "{" + ", ".join(json.dumps(t) for t in names) + "}" if names else "None"
    python = (
        "from agents import RunConfig\n"
        "from agents.extensions import ToolOutputTrimmer\n"
        "\n"
        "run_config = RunConfig(\n"
        "    call_model_input_filter=ToolOutputTrimmer(\n"
        f"        recent_turns={params.recent_turns},\n"
        f"        max_output_chars={params.max_output_chars},\n"
        f"        preview_chars={params.preview_chars},\n"
        f"        trimmable_tools={tools},\n"
        "    ),\n"
        ")\n"
        "# Runner.run(agent, user_input, run_config=run_config)\n"
    )
    notes = (
        "The trimmer sees each function call's output as its own item; the simulation "
        "trims a message answering several calls as a whole, by its total size.",
    )
    return (Snippet("openai-agents", "OpenAI Agents SDK (RunConfig)", "python", python, notes),)


EXPORTS: dict[str, Exporter] = {
    "openai_truncation_auto": truncation,
    "openai_compaction": compaction,
    "openai_tool_output_trimmer": tool_output_trimmer,
}
