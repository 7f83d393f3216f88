"""Context editing: clear the oldest tool results above a trigger, keep the newest few;
clear the thinking of all but the newest assistant turns.

Here: the policies of Anthropic's API: `anthropic_clear_tool_uses`,
`anthropic_clear_thinking` and `anthropic_context_editing` (both edits in one list); what
they share with other clearing policies is in contextsim.engine.clearing. LangChain's
port of tool-use clearing is in contextsim.systems.langchain.policies.

Source: Anthropic API documentation, "Context editing", strategy
`clear_tool_uses_20250919` (beta header context-management-2025-06-27): once the
prompt exceeds `trigger` input tokens, the oldest tool results are cleared in
chronological order and replaced by a placeholder, keeping the last `keep` tool uses;
`clear_at_least` makes the API clear nothing unless it can clear at least that many
tokens; results of `exclude_tools` are never cleared; `clear_tool_inputs` clears the
tool-use parameters of cleared uses too. Editing happens server-side on every request,
on the full history the client sends, so each request is edited afresh (stateless).

Strategy `clear_thinking_20251015` (same beta header; same page): the thinking blocks of
all but the newest `keep` assistant turns are removed (`keep` {"type": "thinking_turns",
"value": N}, N > 0, default 1; or "all", which keeps every one). An assistant turn may
span several assistant messages (a tool loop): everything from a real user message to
the next. Both strategies go in one `context_management.edits` list, applied in order,
and the thinking strategy must be listed first.

Units: tokens under the run's estimator unless said otherwise; indexes are messages.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextsim.engine.accounting import Accountant
from contextsim.engine.clearing import (
    EMPTY_INPUT,
    ThinkingTurns,
    ToolUses,
    cleared_inputs,
    clearing_statics,
    excluded,
    thinking_statics,
)
from contextsim.engine.policy import Context, Plan, no_statics

ANTHROPIC_PLACEHOLDER = "[Tool result cleared]"
"""Stands in for the API's placeholder, whose exact text the documentation does not
give (it says only that a placeholder tells Claude the result was removed); any short
note costs about the same."""


@dataclass(frozen=True, slots=True)
class AnthropicClearParams:
    trigger: int = 100_000
    """Clearing starts once the request exceeds this many input tokens."""
    keep: int = 3
    """The newest tool uses kept whole."""
    clear_at_least: int | None = None
    """Clear nothing unless at least this many tokens can be cleared (None: no minimum)."""
    exclude_tools: tuple[str, ...] = ()
    """Tools whose uses and results are never cleared."""
    clear_tool_inputs: bool = False
    """Also clear the inputs (arguments) of the cleared tool uses."""


class AnthropicClearPlanner:
    """Per request, Anthropic's edits in their order: first (when `keep_thinking` is
    not None) the thinking of all but the newest `keep_thinking` assistant turns is
    cleared; then (when `tools` is given) over the trigger, counted after the thinking
    edit, every result older than the newest `keep` tool uses is cleared, unless that
    frees fewer than `clear_at_least` tokens (all or nothing)."""

    def __init__(
        self,
        ctx: Context,
        tools: AnthropicClearParams | None,
        keep_thinking: int | None = None,
    ) -> None:
        sk = ctx.skeleton
        if tools is not None:
            results = [
                n > 0 and not excluded(names, tools.exclude_tools)
                for n, names in zip(sk.result_count, sk.tool_names, strict=True)
            ]
            inputs = cleared_inputs(sk, results) if tools.clear_tool_inputs else {}
            note = ctx.count(ANTHROPIC_PLACEHOLDER)
            statics = clearing_statics(sk, results, note, inputs, ctx.count(EMPTY_INPUT))
            self.uses = ToolUses(sk, results)
        else:
            statics = no_statics(sk.size)
        if keep_thinking is not None:
            statics = thinking_statics(sk, statics)
            self.turns = ThinkingTurns(sk)
        self.statics = statics
        self.acct = Accountant(sk, self.statics)
        self.tools = tools
        self.keep_thinking = keep_thinking
        self.provider = ctx.provider

    def plan(self, end: int) -> Plan:
        tb = 0
        stage = "none"
        if self.keep_thinking is not None:
            tb = self.turns.boundary(end, self.keep_thinking)
            if self.acct.think_count[min(tb, end)]:
                stage = "clear"
        params = self.tools
        if (
            params is None
            or self.provider(self.acct.span(0, end, 0, tb, self.acct.turn_bound(end)))
            <= params.trigger
        ):
            return Plan(end, stage=stage, thinking_before=tb)
        cb = self.uses.boundary(self.uses.older_than_kept(end, params.keep))
        # clear_save[cb]: tokens freed by clearing everything clearable before cb,
        # results and (with clear_tool_inputs) call inputs alike.
        if cb == 0 or self.acct.clear_save[cb] < (params.clear_at_least or 0):
            return Plan(end, stage=stage, thinking_before=tb)
        return Plan(end, clear_before=cb, stage="clear", thinking_before=tb)


class AnthropicClearPolicy:
    """Anthropic API context editing, strategy `clear_tool_uses_20250919`: above
    `trigger` input tokens clear the oldest tool results, keeping the last `keep` tool
    uses; `clear_at_least` makes it all or nothing; `exclude_tools`;
    `clear_tool_inputs`.

    Source: Anthropic documentation, "Context editing" (build-with-claude/context-editing).
    Counting: the trigger and `clear_at_least` use the run's estimator on the whole
    request (system prompt included), standing in for the API's own count. `keep`
    counts tool results, excluded tools' included (as LangChain's port of this strategy
    does; the documentation does not say). The placeholder is ANTHROPIC_PLACEHOLDER.
    """

    name = "anthropic_clear_tool_uses"
    label = "anthropic_clear_tool_uses: API context editing (clear_tool_uses_20250919)"
    source = "Anthropic API docs, context editing, clear_tool_uses_20250919"
    Params = AnthropicClearParams

    def setup(self, ctx: Context, params: AnthropicClearParams) -> AnthropicClearPlanner:
        return AnthropicClearPlanner(ctx, params)

    def replacements(self, params: AnthropicClearParams) -> dict[str, str]:
        return {"c": ANTHROPIC_PLACEHOLDER}


def _check_keep(keep: int) -> None:
    if keep < 1:
        raise ValueError("keep must be at least 1 (the API's thinking_turns value is > 0)")


@dataclass(frozen=True, slots=True)
class ClearThinkingParams:
    keep: int = 1
    """The newest assistant turns holding thinking whose thinking is kept (the API's
    {"type": "thinking_turns", "value": keep}); at least 1."""
    keep_all: bool = False
    """Keep every thinking block (the API's keep "all"): nothing is cleared."""

    def __post_init__(self) -> None:
        _check_keep(self.keep)


class ClearThinkingPolicy:
    """Anthropic API context editing, strategy `clear_thinking_20251015`: on every
    request, the thinking of all but the newest `keep` assistant turns is removed
    (`keep_all`: none is). With extended thinking on and no such edit, the API behaves
    as with keep 1.

    Source: Anthropic documentation, "Context editing", thinking block clearing
    (build-with-claude/context-editing; beta header context-management-2025-06-27);
    parameter shapes from the anthropic SDK 2.15.0, anthropic/types/beta/
    beta_clear_thinking_20251015_edit_param.py. Units: a turn is every message from a
    real user message to the next (a tool loop is one turn); tokens are the run's
    estimator's count of each assistant message's thinking parts. Approximate: `keep`
    counts turns that hold thinking (the documentation's "assistant turns with thinking
    blocks"), so a turn without thinking does not use up one; a cleared block is
    removed whole, with no placeholder; the API's own count of a thinking block (its
    signature included) is not known here. Clearing breaks the prompt cache where it
    starts, which the cached prefix shows.
    """

    name = "anthropic_clear_thinking"
    label = "anthropic_clear_thinking: API context editing (clear_thinking_20251015)"
    source = "Anthropic API docs, context editing, clear_thinking_20251015"
    Params = ClearThinkingParams

    def setup(self, ctx: Context, params: ClearThinkingParams) -> AnthropicClearPlanner:
        return AnthropicClearPlanner(ctx, None, None if params.keep_all else params.keep)

    def replacements(self, params: ClearThinkingParams) -> dict[str, str]:
        return {}


@dataclass(frozen=True, slots=True)
class AnthropicEditingParams:
    keep_thinking: int = 1
    """clear_thinking_20251015's `keep`: the newest assistant turns holding thinking
    whose thinking is kept; at least 1."""
    keep_all_thinking: bool = False
    """clear_thinking_20251015's keep "all": no thinking is cleared."""
    trigger: int = 100_000
    """clear_tool_uses_20250919's trigger: tool results are cleared once the request,
    its thinking already cleared, exceeds this many input tokens."""
    keep: int = 3
    """The newest tool uses kept whole."""
    clear_at_least: int | None = None
    """Clear no tool result unless at least this many tokens can be cleared (None: no
    minimum)."""
    exclude_tools: tuple[str, ...] = ()
    """Tools whose uses and results are never cleared."""
    clear_tool_inputs: bool = False
    """Also clear the inputs (arguments) of the cleared tool uses."""

    def __post_init__(self) -> None:
        _check_keep(self.keep_thinking)

    def tools(self) -> AnthropicClearParams:
        """The clear_tool_uses_20250919 part of these parameters."""
        return AnthropicClearParams(
            self.trigger, self.keep, self.clear_at_least, self.exclude_tools, self.clear_tool_inputs
        )


class AnthropicEditingPolicy:
    """Anthropic API context editing with both strategies in one
    `context_management.edits` list, in the order the API requires: first
    `clear_thinking_20251015` (the thinking of all but the newest `keep_thinking`
    assistant turns removed), then `clear_tool_uses_20250919` (over `trigger` input
    tokens the oldest tool results cleared, the newest `keep` tool uses kept).

    Source: Anthropic documentation, "Context editing" (build-with-claude/
    context-editing), "Combining strategies": the thinking strategy must be listed
    first. Edits apply in order, so the tool-use trigger and `clear_at_least` are
    compared with the request after its thinking is cleared (our reading of "applied in
    order"). Everything approximate in `anthropic_clear_tool_uses` and
    `anthropic_clear_thinking` is here too.
    """

    name = "anthropic_context_editing"
    label = "anthropic_context_editing: clear thinking, then tool uses (API context editing)"
    source = (
        "Anthropic API docs, context editing, clear_thinking_20251015 + clear_tool_uses_20250919"
    )
    Params = AnthropicEditingParams

    def setup(self, ctx: Context, params: AnthropicEditingParams) -> AnthropicClearPlanner:
        keep = None if params.keep_all_thinking else params.keep_thinking
        return AnthropicClearPlanner(ctx, params.tools(), keep)

    def replacements(self, params: AnthropicEditingParams) -> dict[str, str]:
        return {"c": ANTHROPIC_PLACEHOLDER}
