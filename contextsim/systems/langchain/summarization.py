"""`langchain_summarization`: LangChain v1's SummarizationMiddleware.

Source: langchain 1.5.2 (PyPI), `langchain.agents.middleware.summarization`
(SummarizationMiddleware.before_model, _should_summarize, _determine_cutoff_index,
_find_token_based_cutoff, _find_safe_cutoff_point, _create_summary,
_trim_messages_for_summary, _build_new_messages, _get_approximate_token_counter) and
langchain-core 1.8.3 `langchain_core.messages.utils` (count_tokens_approximately,
trim_messages).

The middleware runs before every model call on the agent state's messages (the system
prompt is apart: not counted, never summarized). When a trigger is met it cuts the list
at an index chosen by `keep`, moves the cut so no ToolMessage is separated from the
AIMessage that called it, replaces everything before the cut with one HumanMessage
"Here is a summary of the conversation to date:\\n\\n<summary>" and writes that back to
the state: later calls see the summary, then the kept messages, then the new ones; a
later summary summarizes the one before it. Counts are count_tokens_approximately of
each message's LangChain form (contextsim.counting.approx_form) at `chars_per_token`, so the
decisions are LangChain's own, message for message; sizes sent are reported under the
run's estimator.

The summarizer sees the summarized messages trimmed to their newest
`trim_tokens_to_summarize` tokens, starting on a HumanMessage (trim_messages with
allow_partial). When nothing is left (no HumanMessage in that tail, the usual case in a
long tool loop), LangChain writes "Previous conversation was too long to summarize."
instead of a summary: the policy gives that summary its real (short) size.

Approximate: the model's summary is `summary_tokens` tokens (4 characters each, in lines
of SUMMARY_LINE characters, for the middleware's own counter). Not modelled: the counter's
scaling by the usage reported on AIMessages (use_usage_metadata_scaling, at most x1.25)
and the trigger on the last reported total_tokens (a log's usage belongs to the original
agent's requests, not these); a rewritten summary at an unchanged cut looks unchanged to
the cache model. Where one saved message is several LangChain messages (parallel tool
results in one message, a result beside text), decisions are made on the LangChain
messages; a cut falling inside a saved message keeps that whole message in what is
shown sent. A result whose call is on an earlier assistant message than the nearest is
taken to answer a parsed call when that message has any and the call itself parsed
(LangChainPiece.call says when it did not).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from contextsim.counting.approx_form import (
    APPROX_IMAGE_TOKENS,
    APPROX_MESSAGE_TOKENS,
    LANGCHAIN_TYPES,
    UNPARSED,
)
from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.counting.skeleton import Skeleton, prefix_sums
from contextsim.engine.cuts import leading_system
from contextsim.engine.policy import Context, Plan, Statics, no_statics

SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
"""SummarizationMiddleware._build_new_messages: the summary message's text before it."""
TOO_LONG = "Previous conversation was too long to summarize."
"""_create_summary's text when trimming leaves nothing to summarize."""
SUMMARY_CHARS = 4
"""Characters per token of the model's summary (English prose), for the counter."""
SUMMARY_LINE = 80
"""Characters per line of the model's summary (its last line decides a partial trim)."""
SUMMARY_NOTE = "[One message summarizing the earlier conversation (LangChain).]"
"""What the step inspector shows in place of the summary."""
HUMAN = LANGCHAIN_TYPES.index("human")
TOOL = LANGCHAIN_TYPES.index("tool")
AI = LANGCHAIN_TYPES.index("ai")
SYSTEM = LANGCHAIN_TYPES.index("system")


@dataclass(frozen=True, slots=True)
class LangChainSummaryParams:
    """SummarizationMiddleware's parameters, with its defaults (tokens unless said).

    Triggers (LangChain's `trigger`): each one set is a threshold; with `trigger_all`
    off any of them triggers (a list of tuples), on all must be met (one dict). None
    set (LangChain's default, trigger=None): never summarizes. Keep (LangChain's
    `keep`, one of three): `keep_fraction` if set, else `keep_tokens` if set, else
    `keep_messages` (LangChain's default ("messages", 20))."""

    trigger_tokens: int | None = None
    """Summarize when the messages count at least this many tokens."""
    trigger_messages: int | None = None
    """... when there are at least this many (LangChain) messages."""
    trigger_fraction: float | None = None
    """... when they count at least this fraction of the window."""
    trigger_all: bool = False
    keep_messages: int = 20
    """Keep the newest this many LangChain messages (moved to keep tool pairs whole)."""
    keep_tokens: int | None = None
    """Keep the newest messages that fit this many tokens."""
    keep_fraction: float | None = None
    """Keep the newest messages that fit this fraction of the window."""
    window: int | None = None
    """The model profile's max_input_tokens, for fractions; None: the hard limit."""
    chars_per_token: float = 4.0
    """The counter's characters per token: LangChain takes 3.3 for Anthropic chat
    models, else 4.0."""
    trim_tokens_to_summarize: int | None = 4_000
    """The summarizer sees only the newest this many tokens of what it summarizes
    (None: all)."""
    summary_tokens: int = 2_000
    """Tokens of the summary the model writes (approximate: the model decides)."""

    def __post_init__(self) -> None:
        for name in ("trigger_fraction", "keep_fraction"):
            value = getattr(self, name)
            if value is not None and not 0 < value <= 1:
                raise ValueError(f"{name}: expected a fraction above 0 and at most 1")
        for name in ("trigger_tokens", "trigger_messages", "keep_tokens", "keep_messages"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name}: expected a number above 0")
        if self.keep_tokens is not None and self.keep_fraction is not None:
            raise ValueError("keep_tokens and keep_fraction: set at most one")
        if self.chars_per_token <= 0:
            raise ValueError("chars_per_token: expected a number above 0")

    @property
    def triggers(self) -> tuple[tuple[str, float], ...]:
        """The thresholds set, as LangChain's (kind, value) pairs."""
        pairs = (
            ("tokens", self.trigger_tokens),
            ("messages", self.trigger_messages),
            ("fraction", self.trigger_fraction),
        )
        return tuple((k, v) for k, v in pairs if v is not None)

    @property
    def keep(self) -> tuple[str, float]:
        """LangChain's keep: ("fraction", f), ("tokens", n) or ("messages", n)."""
        if self.keep_fraction is not None:
            return ("fraction", self.keep_fraction)
        if self.keep_tokens is not None:
            return ("tokens", self.keep_tokens)
        return ("messages", self.keep_messages)


def summary_text(tokens: int) -> str:
    """The shape the policy assumes for a model summary of `tokens` tokens:
    SUMMARY_CHARS characters per token, in lines of SUMMARY_LINE characters (only its
    length and its last line's matter)."""
    chars = SUMMARY_CHARS * tokens
    line = "y" * SUMMARY_LINE + "\n"
    full, rest = divmod(chars, len(line))
    if rest == 0 and full:  # never end on a newline (LangChain strips the summary)
        return line * (full - 1) + "y" * len(line)
    return line * full + "y" * rest


@dataclass(frozen=True, slots=True)
class _Summary:
    """The summary message leading the state: the counter's tokens, its text's last
    line (characters), whether the model wrote it, the estimator's tokens."""

    count: int
    last_line: int
    written: bool
    tokens: int


class LangChainSummaryPlanner:
    """The middleware's state carried from request to request, in LangChain messages.

    Every saved message is one or more LangChain messages ("pieces", approx_form);
    the state is [summary?] + pieces [lo, ...). Prefix sums over the pieces' counts
    make each request O(log M) (plus the pieces of one message)."""

    def __init__(self, ctx: Context, params: LangChainSummaryParams) -> None:
        sk = self.sk = ctx.skeleton
        if len(sk.langchain) != sk.size:
            raise ValueError("the skeleton has no LangChain form; build it with skeleton_builder")
        self.p = params
        self.window = params.window or ctx.hard_limit
        self.statics: Statics = no_statics(sk.size)
        self.lead = leading_system(sk)
        cpt = params.chars_per_token
        self.cpt = cpt
        types: list[int] = []
        counts: list[int] = []
        lines: list[int] = []  # a human piece's last line; -1: no partial possible
        owner: list[int] = []
        callers: list[int] = []
        starts = [0]
        nearest = -1  # the nearest assistant message before the current one
        for i, pieces in enumerate(sk.langchain):
            for kind, content, other, last, images, call in pieces:
                types.append(kind)
                counts.append(self._count(content + other, images))
                lines.append(last if kind == HUMAN and content and not images else -1)
                owner.append(i)
                callers.append(self._caller(sk, i, kind, call, nearest, starts))
            if sk.roles[i] == "assistant":
                nearest = i
            starts.append(len(types))
        self.types, self.counts, self.lines, self.owner = types, counts, lines, owner
        self.starts = starts
        self.d = prefix_sums(counts)
        self.humans = [q for q, t in enumerate(types) if t == HUMAN]
        self.callmax, self.run_end = _tool_runs(types, callers)
        note = ctx.count(SUMMARY_PREFIX)
        text = summary_text(params.summary_tokens)
        self.written = _Summary(
            self._count(len(SUMMARY_PREFIX) + len(text) + len("user")),
            len(text) - text.rfind("\n") - 1,
            True,
            MESSAGE_OVERHEAD + note + params.summary_tokens,
        )
        self.too_long = _Summary(
            self._count(len(SUMMARY_PREFIX) + len(TOO_LONG) + len("user")),
            len(TOO_LONG),
            False,
            MESSAGE_OVERHEAD + ctx.count(SUMMARY_PREFIX + TOO_LONG),
        )
        self.lo = starts[self.lead]
        """The first piece of the state after its summary."""
        self.summary: _Summary | None = None

    def _count(self, chars: int, images: int = 0) -> int:
        """count_tokens_approximately of one message of `chars` counted characters."""
        return math.ceil(chars / self.cpt) + APPROX_MESSAGE_TOKENS + APPROX_IMAGE_TOKENS * images

    @staticmethod
    def _caller(sk: Skeleton, i: int, kind: int, call: int, nearest: int, starts: list[int]) -> int:
        """The piece of the AIMessage whose parsed tool_calls hold the call a ToolMessage
        answers (-1: none). Exact when the call is on the nearest assistant message
        (LangChainPiece.call); none when the call did not parse (UNPARSED); else the
        message answered (skeleton.answers) when it has any parsed tool call (its piece
        counts their repr)."""
        if kind != TOOL or call == UNPARSED:
            return -1
        if call >= 0:
            return starts[nearest]
        answered = sk.answers[i]
        if not 0 <= answered != nearest:
            return -1
        listed = sk.langchain[answered][0][2] > len("assistant")
        return starts[answered] if listed else -1

    def plan(self, end: int) -> Plan:
        e = self.starts[end]
        shift = int(self.summary is not None)
        size = shift + e - self.lo
        if size > 0:
            total = (self.summary.count if self.summary else 0) + self.d[e] - self.d[self.lo]
            if self._triggered(size, total):
                cut = self._cutoff(size, total, e)
                if cut > 0:
                    self.summary = self._summarize(cut, shift)
                    self.lo += cut - shift
        if self.summary is None:
            return Plan(end)
        kept = self.owner[self.lo] if self.lo < len(self.owner) else self.sk.size
        return Plan(end, self.lead, kept, "s", self.summary.tokens, stage="summarize")

    def _triggered(self, size: int, total: int) -> bool:
        p = self.p
        met = [self._met(kind, value, size, total) for kind, value in p.triggers]
        if not met:
            return False
        return all(met) if p.trigger_all else any(met)

    def _met(self, kind: str, value: float, size: int, total: int) -> bool:
        if kind == "messages":
            return size >= value
        if kind == "tokens":
            return total >= value
        return total >= max(int(self.window * value), 1)

    def _cutoff(self, size: int, total: int, e: int) -> int:
        """_determine_cutoff_index over the state [summary?] + pieces [lo, e)."""
        kind, value = self.p.keep
        shift = size - (e - self.lo)
        if kind == "messages":
            if size <= value:
                return 0
            return self._safe(size - int(value), shift)
        target = int(self.window * value) if kind == "fraction" else int(value)
        target = max(target, 1)
        if total <= target:
            return 0
        # The earliest piece whose suffix fits (with the summary the whole did not).
        q = bisect.bisect_left(self.d, self.d[e] - target, self.lo, e + 1)
        j = shift + q - self.lo
        if j >= size:
            if size == 1:
                return 0
            j = size - 1
        return self._safe(j, shift)

    def _safe(self, j: int, shift: int) -> int:
        """_find_safe_cutoff_point: a cut on a ToolMessage moves back to the AIMessage
        that called any of the ToolMessages from there on, else past them."""
        q = self.lo + j - shift
        if q >= len(self.types) or self.types[q] != TOOL:
            return j
        caller = self.callmax[q]
        if caller >= self.lo:
            return shift + caller - self.lo
        return shift + self.run_end[q] - self.lo

    def _summarize(self, cut: int, shift: int) -> _Summary:
        """The summary replacing state[:cut]: the model's, unless trimming the
        summarized messages to trim_tokens_to_summarize leaves none."""
        budget = self.p.trim_tokens_to_summarize
        if budget is None:
            return self.written
        lo, c = self.lo, self.lo + cut - shift
        old = self.summary if shift else None
        if old is None and self.types[lo] == SYSTEM:
            return self.written  # include_system keeps an opening SystemMessage
        d = self.d
        whole = (old.count if old else 0) + d[c] - d[lo]
        has_human = bool(old) or self._human_in(lo, c)
        if whole <= budget:
            return self.written if has_human else self.too_long
        f = bisect.bisect_left(d, d[c] - budget, lo, c + 1)
        if self._human_in(f, c):
            return self.written
        room = budget - (d[c] - d[f])
        # The next older message may be kept in part: its last line must fit.
        if f > lo:
            last = self.lines[f - 1]
            if last >= 0 and self._line_count(f - 1, last) <= room:
                return self.written
            return self.too_long
        if old is not None and self._count(old.last_line + len("user")) <= room:
            return self.written
        return self.too_long

    def _line_count(self, q: int, last: int) -> int:
        """The counter's tokens of human piece q with only its last line as content."""
        i = self.owner[q]
        piece = self.sk.langchain[i][q - self.starts[i]]
        return self._count(last + piece[2], piece[4])

    def _human_in(self, a: int, b: int) -> bool:
        k = bisect.bisect_left(self.humans, a)
        return k < len(self.humans) and self.humans[k] < b


def _tool_runs(types: list[int], callers: list[int]) -> tuple[list[int], list[int]]:
    """Per piece of a run of consecutive ToolMessages: the nearest calling AIMessage of
    the ToolMessages from it to the run's end (-1: none), and where the run ends."""
    n = len(types)
    callmax = [-1] * n
    run_end = list(range(n))
    for q in range(n - 1, -1, -1):
        if types[q] != TOOL:
            continue
        follows = q + 1 < n and types[q + 1] == TOOL
        run_end[q] = run_end[q + 1] if follows else q + 1
        callmax[q] = max(callers[q], callmax[q + 1]) if follows else callers[q]
    return callmax, run_end


class LangChainSummaryPolicy:
    """LangChain `SummarizationMiddleware`: when a trigger is met (tokens, messages or a
    fraction of the window; none by default), the older messages become one summary
    message, the newest `keep` (20 messages by default; or tokens, or a fraction)
    kept, a tool call never separated from its results; repeats as the run grows."""

    name = "langchain_summarization"
    label = "langchain_summarization: LangChain SummarizationMiddleware"
    source = "langchain 1.5.2: langchain.agents.middleware.summarization"
    Params = LangChainSummaryParams

    def setup(self, ctx: Context, params: LangChainSummaryParams) -> LangChainSummaryPlanner:
        return LangChainSummaryPlanner(ctx, params)

    def replacements(self, params: LangChainSummaryParams) -> dict[str, str]:
        return {"s": SUMMARY_NOTE}
