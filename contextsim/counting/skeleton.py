"""The skeleton: a run reduced to counts and structure, what simulation works on.

Built once per (run, estimator) by contextsim.counting.builder: every message's tokens,
kind, user-turn and tool-round structure, plus the few facts detectors need (hashes of
calls and results, error flags, the size of an offload preview) and the size of Deep
Agents' stub for each big tool result (rendered by contextsim.counting.offload_stubs).
Simulation never reads text and never tokenizes.

Units: tokens are integers under the skeleton's estimator; indexes are message indexes.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from itertools import accumulate
from typing import Any

from contextsim.counting.approx_form import LangChainPiece, approx_count
from contextsim.counting.memory import per_skeleton
from contextsim.model import KINDS, Kind, Usage

KIND_INDEX = {k: i for i, k in enumerate(KINDS)}
PREVIEW_LINES = 5
"""Lines of a tool result kept at each end of an offload preview (Deep Agents)."""
STUB_MIN_CHARS = 20_000
"""Tool results over this many characters get their offload stub rendered at build, so
its size is exact; that covers Deep Agents' default limit (80,000 characters) and any
tool_token_limit down to 5,000 tokens of 4 characters."""


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Skeleton:
    """Counts and structure of one run under one estimator (all tuples are per message).

    `answers[i]` is, for a message holding tool results, the index of the assistant
    message whose call its first result answers (-1 otherwise). `call_key[i]` hashes the
    tool name and arguments a tool-result message answers; `result_key[i]` its text.
    `preview_tokens[i]` is the size of a head-and-tail preview of a tool result.
    """

    title: str
    estimator: str
    tokens: tuple[int, ...]
    kinds: tuple[int, ...]
    roles: tuple[str, ...]
    chars: tuple[int, ...]
    user_turn: tuple[bool, ...]
    answers: tuple[int, ...]
    result_count: tuple[int, ...]
    tool_names: tuple[str, ...]
    call_key: tuple[str, ...]
    result_key: tuple[str, ...]
    is_error: tuple[bool, ...]
    preview_tokens: tuple[int, ...]
    ends: tuple[int, ...]
    responses: tuple[int | None, ...]
    usage: tuple[Usage | None, ...]
    final_answer: bool
    final_mentions_space: bool
    subagent: bool
    compactions: tuple[int, ...] = ()
    argument_tokens: tuple[tuple[int, ...], ...] = ()
    """Per message, the estimator's tokens of each client-side tool call's arguments."""
    langchain: tuple[tuple[tuple[int, ...], ...], ...] = ()
    """Per message, its LangChain form as LangChain's approximate counter sees it: one
    LangChainPiece (as plain ints) per LangChain message; see approx_form."""
    call_inputs: tuple[tuple[int, ...], ...] = ()
    call_names: tuple[tuple[str, ...], ...] = ()
    """Per message, the name of each client-side tool call (as argument_tokens)."""
    """Per message, per client-side tool call: characters its LangChain form loses when
    that call's arguments are cleared to {} (0 for a call LangChain cannot parse)."""
    stub_tokens: tuple[tuple[int, ...], ...] = ()
    """Per message holding a tool result over STUB_MIN_CHARS characters, one value per
    tool result (its ToolMessage: the k-th LangChain piece, as in `langchain`): the
    estimator's tokens of the stub Deep Agents leaves when it offloads that result
    (stubs.render_tool_stub of its text and call id; MESSAGE_OVERHEAD not included), 0
    for a result not over STUB_MIN_CHARS. () for every other message."""
    stub_chars: tuple[tuple[int, ...], ...] = ()
    """Like stub_tokens, the stubs' characters (the ToolMessage's content once offloaded)."""
    model: str = ""
    context_window: int | None = None
    """The window the log states (model.Run.context_window)."""
    harness_version: str = ""
    compaction_request: bool = False
    summaries: tuple[int, ...] = ()
    """Indexes of the summaries a logged compaction wrote (Message.compact_summary): a
    compaction's own artifacts, which what-if policies do not send."""
    elisions: tuple[tuple[int, int, int], ...] = ()
    """(message, first step, tokens as sent) of each message the agent sent shortened
    from some request on (model.Elision): what as_logged sends in its place."""
    times: tuple[float | None, ...] = ()
    """Per message, when the log says it was written (model.Message.time: seconds since
    the Unix epoch), None where it says nothing; () when no message has a time."""
    thinking_tokens: tuple[int, ...] = ()
    """Per message, the estimator's tokens of its thinking parts (at most its tokens
    less MESSAGE_OVERHEAD; 0 for a message without thinking): what Anthropic's
    clear_thinking edit removes, and the `thinking` kind of the composition. () for a
    skeleton stored before LAYOUT 2 (read as no thinking)."""
    turn_thinking: tuple[int, ...] = ()
    """Per message, the tokens of its thinking that is sent only within its turn
    (model.ThinkingPart.turn_only; within thinking_tokens): a request leaves it out for
    messages before its newest user turn. () when no message has any."""
    compaction_pre_tokens: tuple[int | None, ...] = ()
    """Per logged compaction (as `compactions`), the context size the log says it
    compacted at (model.Compaction.pre_tokens); () when the skeleton has none."""
    compaction_triggers: tuple[str, ...] = ()
    """Per logged compaction (as `compactions`), "auto", "manual" or "" (unknown)."""
    definitions: tuple[tuple[int, str, int], ...] = ()
    """(message, tool name, tokens) of each tool definition the log holds (a message of
    kind "tools": a capture's), in message order; its tokens are the estimator's count of
    the definition as sent, so a tools message's tokens are the sum of its definitions'
    plus MESSAGE_OVERHEAD. () when the log holds none."""
    opaque_thinking: tuple[int, ...] = ()
    """Per message, the characters of its encrypted reasoning (model.ThinkingPart.
    opaque_chars); () when no message has any. No estimator counts them: a policy that
    models a harness estimating tokens from them (Codex) reads them here."""
    memory: dict[Hashable, Any] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    """What work on this skeleton kept for later (contextsim.counting.memory): not part
    of the skeleton's value, never stored, and a copy (`replace`) starts without it."""

    @property
    def size(self) -> int:
        return len(self.tokens)

    @property
    def steps(self) -> int:
        return len(self.ends)

    def kind(self, i: int) -> Kind:
        return KINDS[self.kinds[i]]


def langchain_pieces(sk: Skeleton, i: int) -> list[LangChainPiece]:
    """The LangChain form of message i (see approx_form)."""
    return [LangChainPiece(*p) for p in sk.langchain[i]]


def approx_tokens(sk: Skeleton) -> list[int]:
    """Per message, count_tokens_approximately of its LangChain form."""
    # Raw tuples (type, content, other, last_line, images, call): this runs per message.
    return [sum(approx_count(p[1] + p[2], p[4]) for p in pieces) for pieces in sk.langchain]


def prefix_sums(values: Sequence[int]) -> list[int]:
    """[0, v0, v0+v1, ...]: sum of values[a:b] is out[b] - out[a]."""
    return list(accumulate(values, initial=0))


def newest_user_turns(sk: Skeleton) -> list[int]:
    """Per history end e (0..size), the index of the newest user turn among messages
    [0, e), 0 when there is none."""
    out, last = [0] * (sk.size + 1), 0
    for i, user in enumerate(sk.user_turn):
        if user:
            last = i
        out[i + 1] = last
    return out


def thinking_of(sk: Skeleton) -> Sequence[int]:
    """Per message, its thinking tokens (Skeleton.thinking_tokens; zeros when the
    skeleton has none)."""
    return sk.thinking_tokens or (0,) * sk.size


LAYOUT = 6
"""The version of the stored form (to_dict). Raised when a field is added that a stored
skeleton cannot do without or whose meaning changes (2: thinking_tokens, times; 3: a
ToolMessage piece says when its call did not parse; 4: opaque_thinking; 5: call_names,
for the tools' breakdown; 6: definitions, for deferring tools), so stored
skeletons of an older layout are built again from their run's messages (see
`current`)."""

FIELDS = tuple(f.name for f in fields(Skeleton) if f.init)
"""The fields a stored skeleton holds (not its memory)."""
OPTIONAL = frozenset(f.name for f in fields(Skeleton) if f.init and f.default is not MISSING)
"""Fields added after the first: data stored before one existed takes its default."""


def to_dict(sk: Skeleton) -> dict[str, object]:
    """The skeleton as JSON-ready data (usage as [input, cache_read, cache_write, output],
    with [cache_write_1h, model] after them when set), with its LAYOUT under "layout"."""
    out: dict[str, object] = {"layout": LAYOUT}
    for name in FIELDS:
        value = getattr(sk, name)
        if name == "usage":
            value = [None if u is None else _usage_list(u) for u in value]
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return out


def _usage_list(u: Usage) -> list[object]:
    """[input, cache_read, cache_write, output], then [cache_write_1h, model] when either
    is set (the order of Usage's fields, so Usage(*list) reads it back)."""
    out: list[object] = [u.input_tokens, u.cache_read, u.cache_write, u.output_tokens]
    return [*out, u.cache_write_1h, u.model] if u.cache_write_1h or u.model else out


def current(data: dict[str, object]) -> bool:
    """Whether stored skeleton data (to_dict) is of the current LAYOUT: data of an older
    one lacks a field some policy needs, and is to be built again from the run."""
    return data.get("layout") == LAYOUT


def from_dict(data: dict[str, object]) -> Skeleton:
    """The inverse of to_dict; a field in OPTIONAL missing from `data` (stored before
    the field existed) takes its default."""
    values: dict[str, object] = {}
    for name in FIELDS:
        if name not in data and name in OPTIONAL:
            continue
        value = data[name]
        if name == "usage":
            value = tuple(None if u is None else Usage(*u) for u in value)  # type: ignore[attr-defined]
        elif isinstance(value, list):
            value = _tuples(value)
        values[name] = value
    return Skeleton(**values)  # type: ignore[arg-type]


def _tuples(value: object) -> object:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def without_artifacts(sk: Skeleton) -> Skeleton:
    """The skeleton as a what-if policy sees it: the summaries a logged compaction wrote
    cost 0 tokens (they would not exist without it). The same skeleton when it has none;
    one copy per skeleton, kept while the skeleton lives (so caches keyed by skeleton
    keep working)."""
    if not sk.summaries:
        return sk

    def build() -> Skeleton:
        tokens = list(sk.tokens)
        for i in sk.summaries:
            tokens[i] = 0
        return replace(sk, tokens=tuple(tokens))

    return per_skeleton(sk, "without_artifacts", build)
