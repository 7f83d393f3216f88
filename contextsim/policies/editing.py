"""Context editing: clear the oldest tool results above a trigger, keep the newest few.

Here: what every tool-use clearing policy shares (which messages hold the newest `keep`
tool uses, the statics of cleared results and cleared call inputs) and the policy of
Anthropic's API, `anthropic_clear_tool_uses`. LangChain's port of it is in
policies.langchain.

Source: Anthropic API documentation, "Context editing", strategy
`clear_tool_uses_20250919` (beta header context-management-2025-06-27): once the
prompt exceeds `trigger` input tokens, the oldest tool results are cleared in
chronological order and replaced by a placeholder, keeping the last `keep` tool uses;
`clear_at_least` makes the API clear nothing unless it can clear at least that many
tokens; results of `exclude_tools` are never cleared; `clear_tool_inputs` clears the
tool-use parameters of cleared uses too. Editing happens server-side on every request,
on the full history the client sends, so each request is edited afresh (stateless).

Units: tokens under the run's estimator unless said otherwise; indexes are messages.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from contextsim.accounting import Accountant
from contextsim.estimators import MESSAGE_OVERHEAD
from contextsim.policies.base import Context, Plan, Statics
from contextsim.skeleton import Skeleton, prefix_sums

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


class AnthropicClearPlanner:
    """Per request: over the trigger, clear every result older than the newest `keep`
    tool uses, unless that frees fewer than `clear_at_least` tokens (all or nothing)."""

    def __init__(self, ctx: Context, params: AnthropicClearParams) -> None:
        sk = ctx.skeleton
        results = [
            n > 0 and not excluded(names, params.exclude_tools)
            for n, names in zip(sk.result_count, sk.tool_names, strict=True)
        ]
        inputs = cleared_inputs(sk, results) if params.clear_tool_inputs else {}
        note = ctx.count(ANTHROPIC_PLACEHOLDER)
        self.statics = clearing_statics(sk, results, note, inputs, ctx.count(EMPTY_INPUT))
        self.acct = Accountant(sk, self.statics)
        self.uses = ToolUses(sk, results)
        self.params = params
        self.provider = ctx.provider

    def plan(self, end: int) -> Plan:
        params = self.params
        if self.provider(self.acct.raw[end]) <= params.trigger:
            return Plan(end)
        cb = self.uses.boundary(self.uses.older_than_kept(end, params.keep))
        # clear_save[cb]: tokens freed by clearing everything clearable before cb,
        # results and (with clear_tool_inputs) call inputs alike.
        if cb == 0 or self.acct.clear_save[cb] < (params.clear_at_least or 0):
            return Plan(end)
        return Plan(end, clear_before=cb, stage="clear")


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
