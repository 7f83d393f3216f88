"""What every policy that clears tool results or thinking in place shares: which
messages hold the newest `keep` tool uses (ToolUses), the statics of cleared results and
of cleared call inputs, and which assistant turns' thinking is old (ThinkingTurns).

Anthropic's context editing, LangChain's ClearToolUsesEdit, SWE-agent's and OpenHands'
observation policies and Inspect AI's edit strategy all build on these. Units: tokens
under the run's estimator; indexes are messages.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from contextsim.counting.approx_form import TOOL_PIECE
from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.counting.skeleton import Skeleton, prefix_sums, thinking_of
from contextsim.engine.policy import Statics

EMPTY_INPUT = "{}"
"""What a cleared tool-call input is counted as: an empty JSON object."""


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
