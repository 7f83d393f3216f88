"""The `deepagents` policy: LangChain Deep Agents' offloading and summarization.

Source: deepagents 0.7.32 (PyPI): `deepagents.middleware.filesystem` (offloading of big
tool results and human messages), `deepagents.middleware._message_eviction` (the stub),
`deepagents.middleware.summarization` (create_summarization_middleware,
compute_summarization_defaults), which takes trigger and cut from langchain 1.5.2
`langchain.agents.middleware.summarization` and counts with langchain-core 1.8.3
`count_tokens_approximately`; the default model is claude-sonnet-4-6 (langchain-anthropic
1.7.10 profile: 1,000,000 input tokens, 128,000 output tokens).

The defaults, as deepagents 0.7.32 sets them (checked against the package in
tests/systems/langchain/test_deepagents_differential.py): compute_summarization_defaults
gives a model with a profile trigger ("fraction", 0.85) and keep ("fraction", 0.10), one without
trigger ("tokens", 170000) and keep ("messages", 6); create_summarization_middleware
passes trim_tokens_to_summarize=None (LangChain's own default is 4,000); the counter
takes 3.3 characters per token for Anthropic chat models; a request over
int(0.95 x window) - max output tokens is summarized too (_input_budget).

Decisions are the middleware's, made with its own counter over each message's LangChain
form; sizes sent are reported under the run's estimator. Stubs are the package's texts
(contextsim.counting.offload_stubs); a tool result's stub has its exact size when the result is over
skeleton.STUB_MIN_CHARS characters (the skeleton renders those stubs at build), which
every result offloaded at a tool_token_limit of 5,000 or more is. Smaller results and
human messages get an approximate size (see _preview_size).

Not modelled: clipping of old write_file/edit_file arguments (truncate_args_settings:
with a profile at the summarization trigger, keeping the same 10%; without one at 20
messages, keeping the newest 20; a string argument over 2,000 characters becomes its
first 20 and "...(argument truncated)"; argument sizes per key are not in the
skeleton), dropping reasoning blocks from kept messages, scaling counts by logged
usage (the log measured the original agent's requests, not these), tail clipping after
a provider's rejection, and the error that ends a run whose request is still over the
input budget once summarized (here it is sent, and flagged if over the hard limit).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from contextsim.counting.approx_form import (
    APPROX_IMAGE_TOKENS,
    APPROX_MESSAGE_TOKENS,
    LANGCHAIN_TYPES,
)
from contextsim.counting.estimators import MESSAGE_OVERHEAD

# The stub texts live in contextsim.counting.offload_stubs (the skeleton renders them too).
from contextsim.counting.offload_stubs import (
    HEAD,
    HUMAN_PATH,
    HUMAN_STUB,
    LINE_LIMIT,
    TAIL,
    TOOL_STUB,
    preview,
    preview_note,
)
from contextsim.counting.skeleton import KIND_INDEX, Skeleton, prefix_sums
from contextsim.engine.accounting import Accountant
from contextsim.engine.policy import Context, Plan, Statics

EXEMPT_TOOLS = ("ls", "glob", "grep", "read_file", "edit_file", "write_file", "delete")
"""TOOLS_EXCLUDED_FROM_EVICTION: file-system tools whose results are never offloaded."""
CHARS_PER_TOKEN = 4
"""NUM_CHARS_PER_TOKEN: offload limits are tokens of 4 characters."""
INPUT_HEADROOM = 0.95
"""A request over 95% of the window less the output reserve is summarized as well."""
CALL_ID = "toolu_" + "0" * 24
"""Stand-in call id for approximated stub sizes (a result of at most
skeleton.STUB_MIN_CHARS characters, whose stub the skeleton does not render);
Anthropic's ids have 30 characters."""
SESSION_PATH = "/conversation_history/session_" + "0" * 32 + ".md"
HUMAN_LINE = 100
"""Assumed line length of an offloaded human message (the skeleton has no preview)."""
SUMMARY_CHARS = 4
"""Characters per token of the summary's prose, for the middleware's counter."""
TOOL = LANGCHAIN_TYPES.index("tool")
OFFLOAD_NOTE = (
    "[Offloaded to /large_tool_results/<tool call id>: a stub with the first and last 5 "
    "lines stands here; the agent can read the whole file.]"
)
SUMMARY_NOTE = "[One message summarizing the earlier conversation (history saved to a file).]"
"""What the step inspector shows in place of an offloaded result and of the summary."""
SUMMARY = (
    "You are in the middle of a conversation that has been summarized.\n\nThe full "
    "conversation history has been saved to {path} should you need to refer back to it for "
    "details.\n\nA condensed summary follows:\n\n<summary>\n{summary}\n</summary>"
)


@dataclass(frozen=True, slots=True)
class DeepAgentsParams:
    """create_deep_agent's defaults for its default model (tokens unless said)."""

    window: int | None = None
    """The model profile's max_input_tokens; None: the simulation's hard limit."""
    profile: bool = True
    """Off: a model without a profile (trigger at 170,000 tokens, keep 6 messages)."""
    trigger_fraction: float = 0.85
    keep_fraction: float = 0.10
    fallback_trigger: int = 170_000
    fallback_keep_messages: int = 6
    max_output: int = 128_000
    """Output tokens a request reserves (ChatAnthropic's max_tokens for the model)."""
    chars_per_token: float = 3.3
    """The counter's characters per token: 3.3 for Anthropic chat models, else 4.0."""
    tool_token_limit: int | None = 20_000
    """A tool result over this many tokens of 4 characters is offloaded (None: never)."""
    human_token_limit: int | None = 50_000
    """So is the newest human message over this many (None: never)."""
    exempt_tools: tuple[str, ...] = EXEMPT_TOOLS
    summary_tokens: int = 2_000
    """Tokens of the summary the model writes; the message adds a fixed wrapper."""

    def __post_init__(self) -> None:
        if not (0 < self.trigger_fraction <= 1 and 0 < self.keep_fraction <= 1):
            raise ValueError("trigger_fraction and keep_fraction must be in (0, 1]")
        if self.chars_per_token <= 0:
            raise ValueError("chars_per_token must be above 0")


class DeepAgentsPlanner:
    """Offloads are fixed at setup; the summary boundary is carried from step to step.

    Decisions use the middleware's own counter (`counts`: count_tokens_approximately of
    each message's LangChain form, stubs in place); the Accountant reports what is sent
    under the run's estimator. Each plan costs O(log M)."""

    def __init__(self, ctx: Context, params: DeepAgentsParams) -> None:
        sk = self.sk = ctx.skeleton
        self.p = params
        self.window = params.window or ctx.hard_limit
        self.statics, self.counts = _offload(ctx, params)
        self.acct = Accountant(sk, self.statics)
        self.sys_end = next((i for i, r in enumerate(sk.roles) if r != "system"), sk.size)
        self.d = prefix_sums(self.counts)
        wrapper = SUMMARY.format(path=SESSION_PATH, summary="")
        chars = len(wrapper) + SUMMARY_CHARS * params.summary_tokens + len("user")
        self.summary_count = math.ceil(chars / params.chars_per_token) + APPROX_MESSAGE_TOKENS
        self.note = MESSAGE_OVERHEAD + ctx.count(wrapper) + params.summary_tokens
        # past_results[i]: the first message at or after i that is not a tool result.
        self.past_results = list(range(sk.size + 1))
        for i in range(sk.size - 1, -1, -1):
            if sk.kinds[i] == KIND_INDEX["tool_result"]:
                self.past_results[i] = self.past_results[i + 1]
        self.boundary: int | None = None
        """The first message kept after the summary; None before any summary."""

    def plan(self, end: int) -> Plan:
        lo = self.sys_end if self.boundary is None else self.boundary
        summary = 0 if self.boundary is None else self.summary_count
        if self._triggered(self.d[self.sys_end] + summary + self.d[end] - self.d[lo]):
            cut = self._cutoff(lo, end)
            if cut is not None:
                self.boundary = cut
        if self.boundary is not None:
            return Plan(end, self.sys_end, self.boundary, "s", self.note, stage="summarize")
        return Plan(end, stage="offload" if self.acct.off_count[end] else "none")

    def _triggered(self, total: int) -> bool:
        p, w = self.p, self.window
        if not p.profile:
            return total >= p.fallback_trigger
        budget = max(0, int(w * INPUT_HEADROOM) - p.max_output)
        return total >= max(math.floor(w * p.trigger_fraction), 1) or total > budget

    def _cutoff(self, lo: int, end: int) -> int | None:
        """The new boundary, or None when the middleware would cut nothing.

        The middleware works on [summary?] + messages [lo, end): its index m is message
        lo + m - shift, shift being 1 when a summary leads; index 0 means no cut."""
        p, d = self.p, self.d
        shift = int(self.boundary is not None)
        size = shift + end - lo
        if p.profile:
            target = max(math.floor(self.window * p.keep_fraction), 1)
            if shift * self.summary_count + d[end] - d[lo] <= target:
                return None
            # The earliest message whose suffix fits (from the summary on it did not).
            s = bisect.bisect_left(d, d[end] - target, lo, end)
            if s == end:  # even the newest message is over: it is kept alone
                if size == 1:
                    return None
                s = end - 1
        else:
            if size <= p.fallback_keep_messages:
                return None
            s = lo + size - p.fallback_keep_messages - shift
        s = self._safe(s, lo, end)
        return s if s - lo + shift > 0 else None

    def _safe(self, s: int, lo: int, end: int) -> int:
        # A cut on a tool result moves back to its call when that call is still in the
        # list, else forward past the results (langchain's _find_safe_cutoff_point).
        sk = self.sk
        if s >= end or sk.kinds[s] != KIND_INDEX["tool_result"]:
            return s
        call = sk.answers[s]
        return call if lo <= call < s else min(self.past_results[s], end)


def _offload(ctx: Context, p: DeepAgentsParams) -> tuple[Statics, list[int]]:
    """The offloaded messages and their stubs' tokens (run's estimator), and every
    message's count by the middleware's counter once stubs replace what they replace.

    A tool result over skeleton.STUB_MIN_CHARS characters (every result offloaded at
    the default limit, and at any tool_token_limit of 5,000 or more) has its stub
    rendered by the skeleton, so the stub's tokens and characters are exact. A smaller
    one (a lower limit) and a human message get _preview_size's approximation. What a
    message keeps besides its stubs (other results, text) counts as its share by
    characters of the message's tokens."""
    sk = ctx.skeleton
    if len(sk.langchain) != sk.size:
        raise ValueError("the skeleton has no LangChain forms: build it again")
    limits = [CHARS_PER_TOKEN * n for n in (p.tool_token_limit, p.human_token_limit) if n]
    counts, big = _counts(sk.langchain, p.chars_per_token, min(limits, default=math.inf))
    statics = Statics([False] * sk.size, [0] * sk.size, [False] * sk.size, [0] * sk.size)
    fixed = {key: (len(text), ctx.count(text)) for key, text in _fixed_texts().items()}
    separators = ctx.count("\n" * 4 + "\n...\n" + "\n" * 4)  # in the skeleton's preview
    ends = set(sk.ends)
    rendered = len(sk.stub_tokens) == sk.size  # skeletons built before stubs have none
    for i in big:
        body = max(sk.tokens[i] - MESSAGE_OVERHEAD, 1)
        rate = max(sk.chars[i], 1) / body  # characters per estimator token
        form = list(sk.langchain[i])
        exact = sk.stub_tokens[i] if rendered else ()
        removed = stub = 0
        for k, (kind, chars, *rest) in enumerate(form):
            what = _offload_kind(sk, i, kind, chars, p, ends)
            if what is None:
                continue
            removed += chars
            if what == "tool" and k < len(exact) and exact[k]:
                stub += exact[k]
                form[k] = (kind, sk.stub_chars[i][k], *rest)
                continue
            key, content = _preview_size(sk, i, chars, what, rate, separators)
            stub += fixed[key][1] + math.ceil(content / rate)
            form[k] = (kind, fixed[key][0] + content, *rest)
        if removed:
            kept = round(body * max(sk.chars[i] - removed, 0) / max(sk.chars[i], 1))
            statics.offloaded[i] = True
            statics.offload_tokens[i] = MESSAGE_OVERHEAD + stub + kept
            counts[i] = _counts((tuple(form),), p.chars_per_token, math.inf)[0][0]
    return statics, counts


def _counts(
    forms: tuple[tuple[tuple[int, ...], ...], ...], cpt: float, low: float
) -> tuple[list[int], list[int]]:
    """count_tokens_approximately of every message (its LangChain form, see
    approx_form.LangChainPiece) at `cpt` characters per token, and the messages holding a
    LangChain message over `low` characters. One pass: it runs over the whole run."""
    ceil = math.ceil
    counts: list[int] = []
    big: list[int] = []
    for i, form in enumerate(forms):
        total = 0
        for _, content, other, _, images, _ in form:
            total += ceil((content + other) / cpt) + APPROX_MESSAGE_TOKENS
            total += APPROX_IMAGE_TOKENS * images
            if content > low and (not big or big[-1] != i):
                big.append(i)
        counts.append(total)
    return counts, big


def _offload_kind(
    sk: Skeleton, i: int, kind: int, chars: int, p: DeepAgentsParams, ends: set[int]
) -> str | None:
    """Which stub ("tool", "human") replaces a LangChain message of message i, if any."""
    if kind == TOOL:
        limit = p.tool_token_limit
        if not limit or all(n in p.exempt_tools for n in sk.tool_names[i].split(",")):
            return None
        return "tool" if chars > CHARS_PER_TOKEN * limit else None
    # Only a request's newest message is checked and, once offloaded, it stays so:
    # i + 1 in ends means some request's history ended with message i.
    limit = p.human_token_limit
    if sk.kind(i) != "user" or not limit or (i + 1) not in ends:
        return None
    return "human" if chars > CHARS_PER_TOKEN * limit else None


def _preview_size(
    sk: Skeleton, i: int, chars: int, what: str, rate: float, separators: int
) -> tuple[str, int]:
    """(stub variant, characters of its preview lines) for a text of `chars` characters:
    an approximation, for stubs the skeleton does not render (a human message, a tool
    result of at most skeleton.STUB_MIN_CHARS characters).

    The skeleton keeps no line counts: sk.preview_tokens[i] (the unnumbered previews of
    the message's results) is shared out by size; human messages are assumed to have
    lines of HUMAN_LINE characters."""
    if what == "human":
        return "human", min(chars, (HEAD + TAIL) * HUMAN_LINE)
    results = sum(q[1] for q in sk.langchain[i] if q[0] == TOOL)
    share = (sk.preview_tokens[i] - MESSAGE_OVERHEAD) * chars / max(results, chars, 1)
    if share * rate >= chars:
        # At most 10 lines for 80,000 characters: every line is clipped; assume one.
        return "few", LINE_LIMIT
    content = max(round((share - separators) * rate), 0)
    cap = (HEAD + TAIL) * LINE_LIMIT
    return ("many_clipped", cap) if content > cap else ("many", content)


def _fixed_texts() -> dict[str, str]:
    """Each stub variant with empty preview lines: its fixed text, gutters and marker
    (1,000 lines stand in for the line count the skeleton does not keep)."""
    blank = preview("\n" * 1000)[0]
    tool = {"tool_call_id": CALL_ID, "file_path": f"/large_tool_results/{CALL_ID}"}
    variants = {"many": (True, False, blank), "many_clipped": (True, True, blank)}
    variants["few"] = (False, True, "1  ")
    texts = {
        key: TOOL_STUB.format(**tool, preview_note=preview_note(o, c, "result"), content_sample=s)
        for key, (o, c, s) in variants.items()
    }
    note = preview_note(True, False, "content")
    texts["human"] = HUMAN_STUB.format(
        file_path=HUMAN_PATH, preview_note=note, content_sample=blank
    )
    return texts


class DeepAgentsPolicy:
    """Offload big tool results and the newest big human message to files, leaving a
    head-and-tail stub; at 85% of the window summarize older messages, keeping the
    newest 10% verbatim and tool calls with their results; again as the run grows."""

    name = "deepagents"
    label = "deepagents: offload big results, summarize at 85% (LangChain Deep Agents)"
    source = "deepagents 0.7.32: FilesystemMiddleware, SummarizationMiddleware"
    Params = DeepAgentsParams

    def setup(self, ctx: Context, params: DeepAgentsParams) -> DeepAgentsPlanner:
        return DeepAgentsPlanner(ctx, params)

    def replacements(self, params: DeepAgentsParams) -> dict[str, str]:
        return {"o": OFFLOAD_NOTE, "s": SUMMARY_NOTE}
