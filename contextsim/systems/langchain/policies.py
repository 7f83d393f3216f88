"""LangChain's context policies: `langchain_clear_tool_uses` and `langchain_trim`.

Both decide the way LangChain does, with `count_tokens_approximately` (4 characters per
token rounded up per message, plus 3 tokens per message) applied to each message's
LangChain form (contextsim.counting.approx_form), so the request they describe is, message for
message, the one LangChain builds; its size is still reported under the run's
estimator. Where one saved message becomes several LangChain messages (parallel tool
results in one message), they are kept, cleared or dropped together.

Sources (langchain 1.5.2, langchain-core 1.8.3):
- langchain.agents.middleware.context_editing: ClearToolUsesEdit.apply and
  ContextEditingMiddleware (default token_count_method "approximate").
- langchain_core.messages.utils: trim_messages, _last_max_tokens, _first_max_tokens,
  count_tokens_approximately.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from itertools import accumulate

from contextsim.counting.approx_form import (
    APPROX_CHARS_PER_TOKEN,
    APPROX_MESSAGE_TOKENS,
    LANGCHAIN_TYPES,
    TOOL_PIECE,
    LangChainPiece,
    approx_count,
)
from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.counting.skeleton import Skeleton, approx_tokens, langchain_pieces, prefix_sums
from contextsim.engine.accounting import Accountant
from contextsim.engine.clearing import (
    EMPTY_INPUT,
    ToolUses,
    cleared_inputs,
    clearing_statics,
    excluded,
)
from contextsim.engine.cuts import leading_system
from contextsim.engine.policy import Context, Plan, no_statics

LANGCHAIN_PLACEHOLDER = "[cleared]"
"""langchain.agents.middleware.context_editing.DEFAULT_TOOL_PLACEHOLDER."""


@dataclass(frozen=True, slots=True)
class LangChainClearParams:
    trigger: int = 100_000
    """The edit runs when the messages count strictly more than this (approximate tokens)."""
    keep: int = 3
    """The newest ToolMessages never cleared."""
    clear_at_least: int = 0
    """Stop clearing, oldest first, once this many approximate tokens are freed (0: clear
    every older result)."""
    exclude_tools: tuple[str, ...] = ()
    """Tools whose results are never cleared."""
    clear_tool_inputs: bool = False
    """Also replace the cleared calls' arguments by {} on the calling AIMessage."""
    placeholder: str = LANGCHAIN_PLACEHOLDER
    """The content a cleared ToolMessage gets."""


class LangChainClearPlanner:
    """ClearToolUsesEdit per request: over the trigger, ToolMessages older than the
    newest `keep` become the placeholder, oldest first, skipping excluded tools and
    results whose call is not on the nearest AIMessage before them, stopping once
    `clear_at_least` tokens are freed (when it is set)."""

    def __init__(self, ctx: Context, params: LangChainClearParams) -> None:
        sk = ctx.skeleton
        if len(sk.langchain) != sk.size:
            raise ValueError("the skeleton has no LangChain form; build it with skeleton_builder")
        approx = approx_tokens(sk)
        # The middleware passes the system prompt apart from the messages it counts.
        lead = leading_system(sk)
        self.counted = prefix_sums([0] * lead + approx[lead:])
        results = [
            n > 0 and self._clearable(sk, i, params.exclude_tools)
            for i, n in enumerate(sk.result_count)
        ]
        inputs = cleared_inputs(sk, results) if params.clear_tool_inputs else {}
        note = ctx.count(params.placeholder)
        self.statics = clearing_statics(sk, results, note, inputs, ctx.count(EMPTY_INPUT))
        self.acct = Accountant(sk, self.statics)
        self.uses = ToolUses(sk, results)
        # The break test runs after each clearing: the first count whose running total
        # reaches clear_at_least. Totals can dip (a result shorter than the
        # placeholder), so search their running maximum, which is sorted.
        freed = self._freed(sk, results, params) if params.clear_at_least > 0 else []
        self.best = list(accumulate(prefix_sums(freed), max))
        self.params = params

    @staticmethod
    def _clearable(sk: Skeleton, i: int, exclude: tuple[str, ...]) -> bool:
        """Every ToolMessage of message i answers a call of the nearest AIMessage before
        it (else ClearToolUsesEdit skips it) and no tool of it is excluded."""
        pieces = [LangChainPiece(*p) for p in sk.langchain[i]]
        calls = [p.call for p in pieces if p.type == TOOL_PIECE]
        return bool(calls) and min(calls) >= 0 and not excluded(sk.tool_names[i], exclude)

    @staticmethod
    def _freed(sk: Skeleton, results: list[bool], params: LangChainClearParams) -> list[int]:
        """Approximate tokens each clearable result message frees, in order: its
        ToolMessages' content becomes the placeholder and, with clear_tool_inputs, its
        calls' arguments {} (the AIMessage is counted as a whole, so what clearing one
        more call saves depends on those cleared before it)."""
        out: list[int] = []
        removed: dict[int, int] = {}
        short = len(params.placeholder)
        caller = -1
        for i, role in enumerate(sk.roles):
            if role == "assistant":
                caller = i
            if not results[i]:
                continue
            pieces = [LangChainPiece(*p) for p in sk.langchain[i]]
            tools = [p for p in pieces if p.type == TOOL_PIECE]
            gain = sum(
                approx_count(p.content + p.other) - approx_count(short + p.other) for p in tools
            )
            if params.clear_tool_inputs:
                ai = LangChainPiece(*sk.langchain[caller][0])
                chars = ai.content + ai.other - removed.get(caller, 0)
                saved = sum(sk.call_inputs[caller][p.call] for p in tools)
                removed[caller] = removed.get(caller, 0) + saved
                gain += approx_count(chars) - approx_count(chars - saved)
            out.append(gain)
        return out

    def plan(self, end: int) -> Plan:
        params = self.params
        if self.counted[end] <= params.trigger:
            return Plan(end)
        count = self.uses.older_than_kept(end, params.keep)
        if params.clear_at_least > 0 and count:
            count = min(bisect.bisect_left(self.best, params.clear_at_least, 1, count + 1), count)
        cb = self.uses.boundary(count)
        return Plan(end, clear_before=cb, stage="clear") if cb else Plan(end)


class LangChainClearPolicy:
    """LangChain `ClearToolUsesEdit` (ContextEditingMiddleware): when the messages count
    more than `trigger` approximate tokens (system prompt not counted), ToolMessages
    older than the newest `keep` become "[cleared]"; `clear_at_least` > 0 stops once
    that many tokens are freed; `exclude_tools`; `clear_tool_inputs`.

    Source: langchain.agents.middleware.context_editing.ClearToolUsesEdit.apply. The
    middleware edits a fresh copy of the messages on every model call, so no result is
    ever already cleared when a request is built: each request is edited afresh.
    """

    name = "langchain_clear_tool_uses"
    label = "langchain_clear_tool_uses: LangChain ClearToolUsesEdit"
    source = "langchain.agents.middleware.context_editing.ClearToolUsesEdit"
    Params = LangChainClearParams

    def setup(self, ctx: Context, params: LangChainClearParams) -> LangChainClearPlanner:
        return LangChainClearPlanner(ctx, params)

    def replacements(self, params: LangChainClearParams) -> dict[str, str]:
        return {"c": params.placeholder}


@dataclass(frozen=True, slots=True)
class LangChainTrimParams:
    include_system: bool = True
    """Always keep a system message that opens the history."""
    start_on: tuple[str, ...] = ("human",)
    """The oldest message kept must be of one of these LangChain types (system, human,
    ai, tool); empty: any."""
    allow_partial: bool = False
    """Keep the newest lines of the message that no longer fits (approximated: see
    LangChainTrimPlanner)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.start_on) - set(LANGCHAIN_TYPES))
        if unknown:
            raise ValueError(
                f"start_on: unknown message type {', '.join(unknown)}; expected "
                f"{', '.join(LANGCHAIN_TYPES)}"
            )


class LangChainTrimPlanner:
    """trim_messages(strategy="last", max_tokens=budget, count_tokens_approximately)
    per request: the opening system message (include_system), then the newest messages
    that fit in what is left, the oldest of them moved forward to a `start_on` type.

    allow_partial is approximate: whether a part of the next older message fits is
    exact for a text message (its last line decides), but how many of its lines fit is
    not known without its text, so the part is sent as `extra` tokens estimated by the
    share of characters that fit, and the message is marked truncated. No part is taken
    of a message with images or of one that is several LangChain messages.
    """

    def __init__(self, ctx: Context, params: LangChainTrimParams) -> None:
        sk = ctx.skeleton
        if len(sk.langchain) != sk.size:
            raise ValueError("the skeleton has no LangChain form; build it with skeleton_builder")
        approx = approx_tokens(sk)
        self.sk = sk
        self.params = params
        self.approx = prefix_sums(approx)
        self.head = int(params.include_system and sk.size > 0 and sk.roles[0] == "system")
        self.room = max(0, ctx.budget - approx[0]) if self.head else ctx.budget
        wanted = {LANGCHAIN_TYPES.index(t) for t in params.start_on}
        # The type trim_messages checks is that of the oldest LangChain message kept.
        self.starts = [i for i in range(self.head, sk.size) if sk.langchain[i][0][0] in wanted]
        self.statics = no_statics(sk.size)

    def plan(self, end: int) -> Plan:
        if end <= self.head:
            return Plan(end)
        # The newest messages whose approximate tokens fit the room left.
        cut = bisect.bisect_left(self.approx, self.approx[end] - self.room, self.head, end)
        part = self._partial(cut, end) if self.params.allow_partial else 0
        if not part:
            cut = self._start_on(cut, end)
        if cut == self.head:
            return Plan(end)
        return Plan(end, self.head, cut, "t", 0, extra=part, stage="trim")

    def _start_on(self, cut: int, end: int) -> int:
        if not self.params.start_on:
            return cut
        j = bisect.bisect_left(self.starts, cut)
        return self.starts[j] if j < len(self.starts) and self.starts[j] < end else end

    def _partial(self, cut: int, end: int) -> int:
        """Estimated tokens of the part of message cut - 1 that trim_messages keeps
        (0: none). It keeps one when the message's last line fits the room left and the
        message is of a start_on type (else start_on drops it again)."""
        if cut <= self.head:
            return 0
        sk = self.sk
        pieces = langchain_pieces(sk, cut - 1)
        if len(pieces) != 1 or pieces[0].images or not pieces[0].content:
            return 0
        piece = pieces[0]
        if self.params.start_on and LANGCHAIN_TYPES[piece.type] not in self.params.start_on:
            return 0
        room = self.room - (self.approx[end] - self.approx[cut])
        if piece._replace(content=piece.last_line).tokens > room:
            return 0
        return _part_tokens(sk, cut - 1, piece, room)


def _part_tokens(sk: Skeleton, i: int, piece: LangChainPiece, room: int) -> int:
    """Our estimator's tokens for the newest characters of message i that fit `room`
    approximate tokens (at most the whole message)."""
    fits = (room - APPROX_MESSAGE_TOKENS) * APPROX_CHARS_PER_TOKEN - piece.other
    kept = max(piece.last_line, min(piece.content, fits))
    # What is not content (tool calls, names) is kept whole.
    total = max(sk.chars[i], 1)
    share = min(1.0, (kept + max(sk.chars[i] - piece.content, 0)) / total)
    body = max(sk.tokens[i] - MESSAGE_OVERHEAD, 0)
    return MESSAGE_OVERHEAD + math.ceil(body * share)


class LangChainTrimPolicy:
    """`langchain_core.messages.trim_messages` with strategy "last", max_tokens = the
    budget, `include_system`, `start_on` ("human"), `allow_partial`, end_on None and the
    `count_tokens_approximately` counter; nothing is inserted where messages were cut.

    Source: langchain_core.messages.utils.trim_messages (_last_max_tokens).
    """

    name = "langchain_trim"
    label = "langchain_trim: LangChain trim_messages (last, approximate counter)"
    source = "langchain_core.messages.utils.trim_messages"
    Params = LangChainTrimParams

    def setup(self, ctx: Context, params: LangChainTrimParams) -> LangChainTrimPlanner:
        return LangChainTrimPlanner(ctx, params)

    def replacements(self, params: LangChainTrimParams) -> dict[str, str]:
        return {}
