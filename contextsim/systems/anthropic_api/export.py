"""Anthropic's Messages API: context editing (`clear_tool_uses_20250919`,
`clear_thinking_20251015`, both in one list) and server-side compaction
(`compact_20260112`), as the request's `context_management` field with its
`anthropic-beta` header: a curl call, the JSON fields, and a call of the anthropic Python
SDK (`client.beta.messages.create(..., betas=[...], context_management=...)`).

Sources: Anthropic documentation, "Context editing" and "Compaction"
(build-with-claude/context-editing, build-with-claude/compaction): the beta headers
context-management-2025-06-27 and compact-2026-01-12, the thinking edit listed first;
the anthropic Python SDK 2.15.0 (anthropic/types/beta/
beta_context_management_config_param.py and the edit types it names).
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from contextsim.systems.anthropic_api.compaction import AnthropicCompactionParams
from contextsim.systems.anthropic_api.policies import (
    AnthropicClearParams,
    AnthropicEditingParams,
    ClearThinkingParams,
)
from contextsim.systems.exporting import ExportContext, Exporter, Snippet

EDITING_BETA = "context-management-2025-06-27"
COMPACTION_BETA = "compact-2026-01-12"
DEFAULT_MODEL = "claude-sonnet-4-6"
"""A model that supports both context editing and compaction."""
MAX_TOKENS = 16_000
THINKING = {"type": "enabled", "budget_tokens": 10_000}
"""Extended thinking, which thinking clearing needs (the documentation's example)."""
ADAPTIVE = {"type": "adaptive"}
ADAPTIVE_MODELS = ("claude-opus-4-6", "claude-mythos-preview")
"""Models on which the SDK warns that enabled thinking is deprecated for adaptive
(anthropic 2.15.0, anthropic/_data/models_to_warn_with_thinking_enabled.py)."""


def model_name(ctx: ExportContext) -> tuple[str, tuple[str, ...]]:
    """The run's model when it is Claude, else DEFAULT_MODEL with a note saying so."""
    if ctx.model.startswith("claude"):
        return ctx.model, ()
    if ctx.model:
        note = (
            f"The run's model ({ctx.model}) is not a Claude model: {DEFAULT_MODEL} is "
            "written in its place."
        )
        return DEFAULT_MODEL, (note,)
    return DEFAULT_MODEL, ()


def python_literal(value: object, level: int = 0) -> str:
    """`value` (JSON-like: dicts, lists, strings, ints, booleans, None) as a Python
    literal, indented 4 spaces per level below `level`."""
    pad, inner = "    " * level, "    " * (level + 1)
    if isinstance(value, dict):
        items = [
            f"{inner}{python_literal(str(k))}: {python_literal(v, level + 1)},"
            for k, v in value.items()
        ]
        return "{\n" + "\n".join(items) + f"\n{pad}}}" if items else "{}"
    if isinstance(value, list):
        items = [f"{inner}{python_literal(v, level + 1)}," for v in value]
        return "[\n" + "\n".join(items) + f"\n{pad}]" if items else "[]"
    if isinstance(value, str):
        # JSON's escapes (\", \\, \n, \uXXXX for control characters) are Python's too.
        return json.dumps(value, ensure_ascii=False)
    return repr(value)  # int, bool, None: repr is a Python literal


def tool_uses_edit(params: AnthropicClearParams) -> dict[str, Any]:
    """The clear_tool_uses_20250919 edit of `params` (trigger and keep always written,
    the rest only when set)."""
    edit: dict[str, Any] = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": params.trigger},
        "keep": {"type": "tool_uses", "value": params.keep},
    }
    if params.clear_at_least is not None:
        edit["clear_at_least"] = {"type": "input_tokens", "value": params.clear_at_least}
    if params.exclude_tools:
        edit["exclude_tools"] = list(params.exclude_tools)
    if params.clear_tool_inputs:
        edit["clear_tool_inputs"] = True
    return edit


def thinking_edit(keep: int, keep_all: bool) -> dict[str, Any]:
    """The clear_thinking_20251015 edit keeping the newest `keep` turns (or all)."""
    value: object = "all" if keep_all else {"type": "thinking_turns", "value": keep}
    return {"type": "clear_thinking_20251015", "keep": value}


def compaction_edit(params: AnthropicCompactionParams) -> dict[str, Any]:
    """The compact_20260112 edit of `params` (the trigger always written)."""
    edit: dict[str, Any] = {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": params.trigger},
    }
    if params.pause_after_compaction:
        edit["pause_after_compaction"] = True
    if params.instructions:
        edit["instructions"] = params.instructions
    return edit


def _snippets(
    ctx: ExportContext,
    edits: list[dict[str, Any]],
    beta: str,
    thinking: bool,
    notes: tuple[str, ...],
) -> tuple[Snippet, ...]:
    """The request with `edits` under `beta` as curl, JSON fields and an SDK call."""
    model, model_notes = model_name(ctx)
    notes = (*model_notes, *notes)
    management = {"edits": edits}
    body: dict[str, Any] = {"model": model, "max_tokens": MAX_TOKENS}
    thought = ADAPTIVE if model in ADAPTIVE_MODELS else THINKING
    if thinking:
        body["thinking"] = thought
    body["messages"] = [{"role": "user", "content": "Hello"}]
    body["context_management"] = management
    fields = json.dumps({"context_management": management}, indent=2)
    curl = (
        "curl https://api.anthropic.com/v1/messages \\\n"
        '  --header "x-api-key: $ANTHROPIC_API_KEY" \\\n'
        '  --header "anthropic-version: 2023-06-01" \\\n'
        f'  --header "anthropic-beta: {beta}" \\\n'
        '  --header "content-type: application/json" \\\n'
        f"  --data {shlex.quote(json.dumps(body, indent=2))}\n"
    )
    literal = python_literal(management, 1)
    python = (
        "import anthropic\n"
        "\n"
        "client = anthropic.Anthropic()\n"
        'messages = [{"role": "user", "content": "Hello"}]  # the whole conversation so far\n'
        "response = client.beta.messages.create(\n"
        f"    model={json.dumps(model)},\n"
        f"    max_tokens={MAX_TOKENS},\n"
        + (f"    thinking={python_literal(thought, 1)},\n" if thinking else "")
        + "    messages=messages,\n"
        f"    betas=[{json.dumps(beta)}],\n"
        f"    context_management={literal},\n"
        ")\n"
    )
    header = f"Send the header anthropic-beta: {beta} with every request."
    return (
        Snippet("anthropic-curl", "Messages API request (curl)", "sh", curl, notes),
        Snippet(
            "anthropic-api",
            "Messages API request (JSON field)",
            "json",
            fields,
            (header, *notes),
        ),
        Snippet("anthropic-python", "anthropic Python SDK", "python", python, notes),
    )


COUNTING = (
    "The API compares its trigger with its own count of the whole request (system "
    "prompt and tools included); the simulation compared it with the reconciled size "
    "(the estimator's count when the run has no measured usage)."
)


def clear_tool_uses(ctx: ExportContext) -> tuple[Snippet, ...]:
    """anthropic_clear_tool_uses: one clear_tool_uses_20250919 edit."""
    params: AnthropicClearParams = ctx.params
    notes = (COUNTING, "The placeholder that stands in for a cleared result is the API's own.")
    return _snippets(ctx, [tool_uses_edit(params)], EDITING_BETA, False, notes)


THINKING_NOTES = (
    "Thinking clearing works with extended thinking on (`thinking` in the request); the "
    "thinking settings here are an example.",
    "Pass every assistant message back with its thinking blocks unchanged: the API "
    "removes the old ones itself.",
)


def clear_thinking(ctx: ExportContext) -> tuple[Snippet, ...]:
    """anthropic_clear_thinking: one clear_thinking_20251015 edit."""
    params: ClearThinkingParams = ctx.params
    edit = thinking_edit(params.keep, params.keep_all)
    return _snippets(ctx, [edit], EDITING_BETA, True, THINKING_NOTES)


def context_editing(ctx: ExportContext) -> tuple[Snippet, ...]:
    """anthropic_context_editing: the thinking edit, then the tool-use edit (the API
    requires the thinking strategy first)."""
    params: AnthropicEditingParams = ctx.params
    edits = [
        thinking_edit(params.keep_thinking, params.keep_all_thinking),
        tool_uses_edit(params.tools()),
    ]
    notes = (*THINKING_NOTES, COUNTING, "The edits apply in this order; keep it.")
    return _snippets(ctx, edits, EDITING_BETA, True, notes)


def compaction(ctx: ExportContext) -> tuple[Snippet, ...]:
    """anthropic_compaction: one compact_20260112 edit."""
    params: AnthropicCompactionParams = ctx.params
    notes = [
        COUNTING,
        f"summary_tokens ({params.summary_tokens:,}) cannot be set: the summary is the "
        "model's (the simulation's size is an assumption).",
        "Append each response's whole content (the compaction block included) to the "
        "messages you send next: the API goes on from the newest compaction block.",
    ]
    if params.pause_after_compaction:
        kept = params.preserve_messages
        notes.append(
            'When the response stops with stop_reason "compaction", send again the '
            "compaction block as an assistant message"
            + (
                f" followed by the newest {kept} messages of that request (not starting "
                "with a tool result whose call is left out)"
                if kept
                else ""
            )
            + ": that is client code, which the API cannot be told."
        )
    if params.trigger > ctx.hard_limit:
        notes.append(
            f"The trigger ({params.trigger:,}) is above the hard limit "
            f"({ctx.hard_limit:,}): a request is refused before it can be compacted."
        )
    return _snippets(ctx, [compaction_edit(params)], COMPACTION_BETA, False, tuple(notes))


EXPORTS: dict[str, Exporter] = {
    "anthropic_clear_tool_uses": clear_tool_uses,
    "anthropic_clear_thinking": clear_thinking,
    "anthropic_context_editing": context_editing,
    "anthropic_compaction": compaction,
}
"""Policy name -> its exporter (merged into contextsim.registry.EXPORTERS)."""
