"""Runs, messages and parts, and the structure derived from them.

Everything here is an immutable dataclass. A run is never altered by a policy: policies
describe what they would send, in terms of message indexes into the run.

Units: token counts are integers of tokens; message and step indexes are 0-based.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")

Kind = Literal[
    "system",
    "user",
    "assistant",
    "tool_call",
    "tool_result",
    "note",
    "tools",
    "thinking",
    "attachment",
]
KINDS: tuple[Kind, ...] = (
    "system",
    "user",
    "assistant",
    "tool_call",
    "tool_result",
    "note",
    "tools",
    "thinking",
    "attachment",
)
"""Kinds of message, in the order stored skeletons index them (new kinds go last).
`thinking` is no message's kind: it is the thinking parts of assistant messages, which
the composition (accounting.Accountant.kept_by_kind) counts apart from their message.
`attachment` is context the harness injected into a request (Message.attachment)."""


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ThinkingPart:
    """Reasoning the model wrote. `text` is what the log shows of it (a summary, or
    nothing when it is encrypted); `opaque_chars` is the length in characters of its
    encrypted form (0 when there is none), which no estimator counts as text but which
    a harness may estimate tokens from (Codex does, to decide when to compact)."""

    text: str
    type: Literal["thinking"] = "thinking"
    opaque_chars: int = 0
    sent_tokens: int = 0
    """Tokens the provider counts for it when it is sent, where the log says (Codex:
    its call's reasoning_output_tokens): every estimator counts these in place of its
    text (a summary, which is not what is sent back). 0: its text is counted."""
    turn_only: bool = False
    """Sent back only within its turn: OpenAI's API drops reasoning items that come
    before the newest user message from what the model reads."""


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A request by the model to run a tool. `arguments` is the JSON text sent.

    `server_side` marks a tool the provider ran inside the same response (a web search):
    no result message answers it.
    """

    id: str
    name: str
    arguments: str
    server_side: bool = False
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """The answer to a tool call, matched by `call_id`."""

    call_id: str
    text: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class ImagePart:
    media_type: str = ""
    type: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class ToolSpecPart:
    """One tool definition the request offered the model: its `name` and `definition`,
    the JSON text sent (description and parameter schema). A system message made only
    of them is of kind ``tools``."""

    name: str
    definition: str
    type: Literal["tool_spec"] = "tool_spec"


Part = TextPart | ThinkingPart | ToolCallPart | ToolResultPart | ImagePart | ToolSpecPart


@dataclass(frozen=True, slots=True)
class Usage:
    """Usage measured by the provider for one request (tokens).

    `input_tokens` excludes cached tokens: the context the model read is
    input + cache_read + cache_write (Anthropic's convention; importers normalize
    OpenAI's, whose prompt tokens include the cached ones).
    """

    input_tokens: int
    cache_read: int = 0
    cache_write: int = 0
    output_tokens: int = 0
    cache_write_1h: int = 0
    """Of `cache_write`, the tokens written to Anthropic's 1-hour cache (billed at 2x
    the input price, where a 5-minute write is billed at 1.25x)."""
    model: str = ""
    """The model that answered, where the log names it per response ("" for the run's
    model): a response is priced at its own model's prices."""

    @property
    def context(self) -> int:
        """Tokens the model read for this request."""
        return self.input_tokens + self.cache_read + self.cache_write


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a run.

    `usage` is set on an assistant message when the log measured the request that
    produced it. `compact_summary` marks a summary written by a compaction.
    `source` says where in the input the message began (e.g. ``line 12``), for errors
    and for the inspector. `time` is when the log says the message was written, in
    seconds since the Unix epoch (UTC), None when it says nothing; for an assistant
    message, when its response began to arrive.
    """

    role: Role
    parts: tuple[Part, ...]
    usage: Usage | None = None
    compact_summary: bool = False
    source: str = ""
    time: float | None = None
    attachment: bool = False
    """Context the harness added to the request on its own (Claude Code's attachment
    records: files read in, memory, hook output, reminders), sent as a system message:
    its own kind in the composition."""

    @property
    def kind(self) -> Kind:
        """The message's kind for composition charts.

        A user message made only of tool results is a tool result, not a user turn;
        an assistant message with tool calls is a tool call.
        """
        if self.role == "system":
            if self.parts and all(isinstance(p, ToolSpecPart) for p in self.parts):
                return "tools"
            return "attachment" if self.attachment else "system"
        if self.role == "tool" or (
            self.parts and all(isinstance(p, ToolResultPart) for p in self.parts)
        ):
            return "tool_result"
        if self.role == "assistant":
            if any(isinstance(p, ToolCallPart) for p in self.parts):
                return "tool_call"
            return "assistant"
        return "user"

    @property
    def is_user_turn(self) -> bool:
        """True for a real user message (not tool results, not a compaction summary)."""
        return self.kind == "user" and not self.compact_summary

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @property
    def tool_results(self) -> tuple[ToolResultPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolResultPart))

    @property
    def text(self) -> str:
        """The text of the text and thinking parts, joined by newlines."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart | ThinkingPart))


def estimator_text(message: Message) -> str:
    """Everything an estimator reads in `message`: text, thinking, tool-call names and
    arguments, tool results (images carry no text), joined by newlines."""
    pieces = []
    for part in message.parts:
        if isinstance(part, TextPart | ThinkingPart | ToolResultPart):
            pieces.append(part.text)
        elif isinstance(part, ToolCallPart):
            pieces.append(part.name + part.arguments)
        elif isinstance(part, ToolSpecPart):
            pieces.append(part.definition)
    return "\n".join(pieces)


@dataclass(frozen=True, slots=True)
class Compaction:
    """A compaction recorded by the log, before message `before_message`.

    `pre_tokens` is the context size the log says it had before compacting.
    """

    before_message: int
    pre_tokens: int | None = None
    trigger: str = ""


@dataclass(frozen=True, slots=True)
class Rejection:
    """A request the provider refused, as the agent recorded it: the request whose
    history ends before message `before_message` (the agent's note of the error stands
    where the answer would have, when the log keeps one). `reason` is the error as
    logged (its kind, status and text, shortened); `overflow` says the request was
    refused for its size (the context window); `time` in seconds since the epoch."""

    before_message: int
    reason: str
    overflow: bool = False
    time: float | None = None


OVERFLOW = re.compile(
    r"prompt is too long|context window|context_length_exceeded|maximum context length"
    r"|input token count .{0,40}exceeds|too many (input )?tokens|request too large",
    re.IGNORECASE,
)
"""What the providers and agents say when a request does not fit the window (Anthropic
"prompt is too long: N tokens > M maximum", OpenAI context_length_exceeded, Gemini "the
input token count (N) exceeds the maximum")."""


def refused_for_size(reason: str) -> bool:
    """Whether an error as logged says the request did not fit the window."""
    return OVERFLOW.search(reason) is not None


@dataclass(frozen=True, slots=True)
class Elision:
    """Message `message` sent as `text` instead of in full from request `from_step` on,
    as the log's own record of each request shows (SWE-agent's history processors
    replace old observations with a line such as "Old environment output: (40 lines
    omitted)"). The run keeps the message whole, for what-ifs; `as_logged` sends `text`.
    """

    message: int
    from_step: int
    text: str


@dataclass(frozen=True, slots=True)
class Run:
    """One saved agent conversation, all messages, in order.

    `session_id` identifies the run in its source; `parent_session_id` links a subagent
    to the session that started it (runs sharing a root form a collection).
    `context_window` is the window the log itself states (tokens; Codex's
    ``model_context_window``), None when it says none; `harness_version` the agent's
    version as logged (Claude Code's ``version``), whose rules some policies follow.
    """

    title: str
    messages: tuple[Message, ...]
    format: str = ""
    model: str = ""
    session_id: str = ""
    parent_session_id: str = ""
    subagent: bool = False
    compactions: tuple[Compaction, ...] = ()
    context_window: int | None = None
    harness_version: str = ""
    compaction_request: bool = False
    window_source: str = ""
    """Where `context_window` comes from, said for a person ("" when the log states it
    or gives none): an agent system's rule for the model and version, or what the log
    reveals."""
    """The run is the request that wrote a compaction's summary (Claude Code's
    ``acompact`` agent), attached to its session's compaction, not a subagent."""
    elisions: tuple[Elision, ...] = ()
    """Messages the agent itself sent shortened from some request on (see Elision)."""
    project: str = ""
    """The folder the agent worked in, as the log says (Claude Code's and Codex's
    `cwd`), or what names it (Gemini CLI's project hash); "" when the log says none."""
    rejections: tuple[Rejection, ...] = ()
    """Requests the provider refused, as the log records them (Claude Code's API error
    lines, Gemini CLI's error records; Codex does not keep its errors in a rollout)."""


@dataclass(frozen=True, slots=True)
class Step:
    """Request `index`: the history is `run.messages[:end]`.

    `response` is the index of the assistant message this request produced, or None
    for a trailing request that was pending or rejected.
    """

    index: int
    end: int
    response: int | None
    usage: Usage | None


def request_bounds(roles: Sequence[str]) -> list[tuple[int, int | None]]:
    """(history end, response index) of every request, given the messages' roles.

    Request k's history is every message before the k-th assistant message. When the
    last message is not an assistant's, one more request is pending (response None).
    """
    out: list[tuple[int, int | None]] = [(i, i) for i, r in enumerate(roles) if r == "assistant"]
    if roles and roles[-1] != "assistant":
        out.append((len(roles), None))
    return out


def steps(run: Run) -> tuple[Step, ...]:
    """Every request of the run, in order (see request_bounds)."""
    bounds = request_bounds([m.role for m in run.messages])
    return tuple(
        Step(k, end, response, None if response is None else run.messages[response].usage)
        for k, (end, response) in enumerate(bounds)
    )


def request_count(run: Run) -> int:
    """Distinct model calls recorded in the run (its assistant messages)."""
    return sum(1 for m in run.messages if m.role == "assistant")


@dataclass(frozen=True, slots=True)
class Turn:
    """A user turn: messages [start, end) beginning with a real user message."""

    start: int
    end: int


def user_turns(run: Run) -> tuple[Turn, ...]:
    """The user turns of the run. Messages before the first user turn belong to none."""
    starts = [i for i, m in enumerate(run.messages) if m.is_user_turn]
    ends = [*starts[1:], len(run.messages)]
    return tuple(Turn(s, e) for s, e in zip(starts, ends, strict=True))


@dataclass(frozen=True, slots=True)
class Round:
    """A tool round: the assistant message `call` and the messages answering it.

    `results` are the indexes of the messages holding results for the round's calls.
    A round is complete when every call has a result.
    """

    call: int
    results: tuple[int, ...] = field(default_factory=tuple)
    complete: bool = False


def tool_rounds(run: Run) -> tuple[Round, ...]:
    """Every tool round of the run, in order of the calling message."""
    rounds: list[Round] = []
    owner: dict[str, int] = {}
    pending: dict[int, set[str]] = {}
    results: dict[int, list[int]] = {}
    for i, message in enumerate(run.messages):
        calls = message.tool_calls
        if message.role == "assistant" and calls:
            pending[i] = {c.id for c in calls if not c.server_side}
            results[i] = []
            for c in calls:
                owner[c.id] = i
        for r in message.tool_results:
            call = owner.get(r.call_id)
            if call is None:
                continue
            pending[call].discard(r.call_id)
            if not results[call] or results[call][-1] != i:
                results[call].append(i)
    for call, idx in results.items():
        rounds.append(Round(call, tuple(idx), not pending[call]))
    return tuple(sorted(rounds, key=lambda r: r.call))
