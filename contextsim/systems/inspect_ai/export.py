"""Inspect AI: a `react()` agent's `compaction=` strategy for `inspect_compaction`.

Source: inspect-ai 0.3.285, inspect_ai/agent/_react.py (react(compaction=...)) and
inspect_ai/model/_compaction/ (CompactionAuto, CompactionSummary, CompactionTrim,
CompactionEdit and their arguments).
"""

from __future__ import annotations

from contextsim.systems.exporting import ExportContext, Exporter, Snippet
from contextsim.systems.inspect_ai.policies import InspectParams

CLASSES = {
    "auto": "CompactionAuto",
    "summary": "CompactionSummary",
    "trim": "CompactionTrim",
    "edit": "CompactionEdit",
}


def _threshold(value: float) -> str:
    """Inspect reads an int as tokens and a float <= 1.0 as a share of the window."""
    return repr(value) if value <= 1.0 else str(int(value))


def compaction(ctx: ExportContext) -> tuple[Snippet, ...]:
    params: InspectParams = ctx.params
    cls = CLASSES[params.strategy]
    arguments = [f"threshold={_threshold(params.threshold)}"]
    notes: list[str] = []
    if params.strategy == "trim":
        arguments.append(f"preserve={params.preserve}")
    elif params.strategy == "edit":
        turns = '"all"' if params.keep_thinking_turns is None else params.keep_thinking_turns
        arguments += [f"keep_tool_uses={params.keep_tool_uses}", f"keep_thinking_turns={turns}"]
        if params.exclude_tools:
            arguments.append(f"exclude_tools={list(params.exclude_tools)!r}")
    else:
        notes.append(
            f"summary_tokens ({params.summary_tokens:,}) cannot be set: the summary is "
            "what the model writes."
        )
    if params.strategy == "auto":
        notes.append(
            "CompactionAuto uses the provider's native compaction where it has one "
            "(OpenAI, Anthropic); the simulation shows its summary fallback."
        )
    if params.window is not None:
        notes.append(
            f"window ({params.window:,}): Inspect takes the model's window from its model "
            "database; for another one, register it with set_model_info(...)."
        )
    python = (
        "from inspect_ai.agent import react\n"
        f"from inspect_ai.model import {cls}\n"
        "\n"
        f"compaction = {cls}({', '.join(arguments)})\n"
        "agent = react(compaction=compaction)\n"
    )
    return (Snippet("inspect-ai", "Inspect AI react() agent", "python", python, tuple(notes)),)


EXPORTS: dict[str, Exporter] = {"inspect_compaction": compaction}
