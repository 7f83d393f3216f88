"""Context editing: clear the oldest tool results above a trigger, keep the newest few;
clear the thinking of all but the newest assistant turns.

Here: what every tool-use clearing policy shares (which messages hold the newest `keep`
tool uses, the statics of cleared results and cleared call inputs) and the policies of
Anthropic's API: `anthropic_clear_tool_uses`, `anthropic_clear_thinking` and
`anthropic_context_editing` (both edits in one list). LangChain's port of tool-use
clearing is in policies.langchain.

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

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from contextsim.accounting import Accountant
from contextsim.estimators import MESSAGE_OVERHEAD
from contextsim.policies.base import Context, Plan, Statics, no_statics
from contextsim.skeleton import Skeleton, prefix_sums, thinking_of

ANTHROPIC_PLACEHOLDER = "[Tool result cleared]"
"""Stands in for the API's placeholder, whose exact text the documentation does not
give (it says only that a placeholder tells Claude the result was removed); any short
note costs about the same."""

EMPTY_INPUT = "{}"
"""What a cleared tool-call input is counted as: an empty JSON object."""

TOOL_PIECE = 3
"""langchain_form.LANGCHAIN_TYPES index of a ToolMessage."""


def excluded(names: str, exclude: Sequence[str]) -> bool:
    """True when a result message answers a call of an excluded tool (`names` is the
    Skeleton's comma-joined tool names of the message)."""
    return bool(exclude) and any(n in exclude for n in names.split(",") if n)


class ToolUses:
    """The run's tool results counted as tool uses, to find in O(log M) how many
    clearable result messages are older than the newest `keep` tool uses.

    A message holding several results (parallel calls answered in one message) is
    kept whole when any of its results is among the newest `keep`.
    """

    def __init__(self, sk: Skeleton, clearable: Sequence[bool]) -> None:
        self.results = [i for i, n in enumerate(sk.result_count) if n > 0]
        self.units = prefix_sums([sk.result_count[i] for i in self.results])
        self.clear_pos = [i for i in self.results if clearable[i]]

    def older_than_kept(self, end: int, keep: int) -> int:
        """How many clearable result messages of history [0, end) precede every message
        holding one of its newest `keep` tool uses (keep 0: all of them)."""
        n = bisect.bisect_left(self.results, end)
        first_kept = self.units[n] - keep
        if first_kept <= 0:
            return 0
        # units[m] <= first_kept < units[m + 1]: message m holds the first kept use.
        m = bisect.bisect_right(self.units, first_kept) - 1
        limit = self.results[m] if m < n else end
        return bisect.bisect_left(self.clear_pos, limit)

    def boundary(self, count: int) -> int:
        """clear_before that clears the oldest `count` clearable result messages.

        Just past the last of them, not at the first kept message: a call message
        between the two (whose results are all kept) must not count as cleared."""
        return self.clear_pos[count - 1] + 1 if count else 0


def cleared_inputs(sk: Skeleton, results: Sequence[bool]) -> dict[int, set[int]]:
    """For each assistant message, the positions (among its client-side calls) of the
    calls answered by clearable result messages: the inputs cleared with them."""
    out: dict[int, set[int]] = {}
    caller = -1
    for i, role in enumerate(sk.roles):
        if role == "assistant":
            caller = i
        elif results[i]:
            # A piece's call is set only when it answers the nearest assistant before it.
            calls = {p[5] for p in sk.langchain[i] if p[0] == TOOL_PIECE and p[5] >= 0}
            if calls:
                out.setdefault(caller, set()).update(calls)
    return out


def clearing_statics(
    sk: Skeleton,
    results: Sequence[bool],
    note_tokens: int,
    inputs: dict[int, set[int]],
    empty_input_tokens: int,
) -> Statics:
    """Statics of a clearing policy: result messages flagged in `results` cost one note
    of `note_tokens` per result when cleared; assistant messages in `inputs` become
    clearable, their listed calls' arguments replaced by an empty input.

    A call message is cleared whole when it precedes the clear boundary: when the
    boundary splits its parallel calls, the kept calls' inputs count as cleared too
    (the real systems clear only the cleared calls' inputs).
    """
    clearable = list(results)
    cleared = [MESSAGE_OVERHEAD + n * note_tokens for n in sk.result_count]
    for call, positions in inputs.items():
        arguments = sk.argument_tokens[call]
        clearable[call] = True
        cleared[call] = (
            sk.tokens[call]
            - sum(arguments[p] for p in positions)
            + len(positions) * empty_input_tokens
        )
    return Statics(clearable, cleared)


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


class ThinkingTurns:
    """The run's assistant messages holding thinking, numbered by assistant turn, to
    find in O(log M) where the thinking of the newest `keep` turns that hold thinking
    begins. A turn runs from a real user message (Skeleton.user_turn) to the next; the
    messages before the first user message are a turn of their own."""

    def __init__(self, sk: Skeleton) -> None:
        thinking = thinking_of(sk)
        self.at: list[int] = []
        self.ranks: list[int] = []
        """ranks[j]: how many distinct turns hold thinking up to at[j] (from 1)."""
        turn, last, rank = 0, -1, 0
        for i, (t, starts, role) in enumerate(zip(thinking, sk.user_turn, sk.roles, strict=True)):
            turn += starts
            if t > 0 and role == "assistant":
                if turn != last:
                    rank, last = rank + 1, turn
                self.at.append(i)
                self.ranks.append(rank)

    def boundary(self, end: int, keep: int) -> int:
        """thinking_before of history [0, end): the first message with thinking of the
        newest `keep` turns holding thinking (0: nothing to clear)."""
        n = bisect.bisect_left(self.at, end)
        first = (self.ranks[n - 1] if n else 0) - keep + 1
        if first <= 1:
            return 0
        return self.at[bisect.bisect_left(self.ranks, first)]


def thinking_statics(sk: Skeleton, statics: Statics) -> Statics:
    """`statics` with every assistant message's thinking clearable (Statics.thinking)."""
    thinking = [
        t if role == "assistant" else 0 for t, role in zip(thinking_of(sk), sk.roles, strict=True)
    ]
    return Statics(
        statics.clearable,
        statics.cleared_tokens,
        statics.offloaded,
        statics.offload_tokens,
        thinking,
    )


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
        if params is None or self.provider(self.acct.span(0, end, 0, tb)) <= params.trigger:
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
