"""Building a demo run message by message, with measured usage from a real tokenizer.

Every assistant message gets a `Usage` as a provider would have reported it, but
computed here: `input_tokens` is the o200k count of the history before the message (the
sum of `count_message(m, o200k)` over it, per-message overhead included) and
`output_tokens` the o200k count of the message's own parts (no overhead). No prompt
cache is modelled: cache read and write are 0, so `Usage.context == input_tokens`.

Each message is counted once, when it is added, and the history's count is a running
sum, so building a run costs one tokenizer pass over its text, not one per step.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD, CountMemo
from contextsim.model import Message, Part, Run, TextPart, ToolCallPart, ToolResultPart, Usage

MODEL = "claude-sonnet-4-5"
WINDOW = 1_000_000
"""The window the demo runs state: the seed incident's hard limit."""
FORMAT = "demo"
REFERENCE = ESTIMATORS["o200k"]
"""The tokenizer the demo's measured usage is computed with."""


def tool_message(call: ToolCallPart, text: str, *, is_error: bool = False) -> Message:
    """The tool message answering `call` with `text`."""
    return Message("tool", (ToolResultPart(call.id, text, is_error),))


def warm_counts(messages: list[Message], memo: CountMemo) -> None:
    """Count `messages` with o200k on two threads, into `memo`.

    tiktoken releases the GIL while encoding, so the big tool results of a demo are
    counted about twice as fast; the builder then finds each count memoized. Counts
    are the same either way: this only changes when they are computed.
    """
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in pool.map(lambda m: memo.count(m, REFERENCE), messages):
            pass


class RunBuilder:
    """Appends messages to a run under construction and keeps its o200k total.

    `tag` makes tool-call ids unique across the demo runs (``toolu_<tag>_<n>``).
    """

    def __init__(self, tag: str, memo: CountMemo | None = None) -> None:
        self._tag = tag
        self.memo = memo if memo is not None else CountMemo()
        """Where the messages' o200k counts are made (and kept, for whoever counts the
        run's messages next with the same memo)."""
        self._messages: list[Message] = []
        self._context = 0  # o200k tokens of every message so far (a prefix sum)
        self._calls = 0

    @property
    def context(self) -> int:
        """o200k tokens of the history so far: what the next request would send."""
        return self._context

    def _add(self, message: Message) -> Message:
        self._messages.append(message)
        self._context += self.memo.count(message, REFERENCE)
        return message

    def system(self, text: str) -> None:
        self._add(Message("system", (TextPart(text),)))

    def user(self, text: str) -> None:
        self._add(Message("user", (TextPart(text),)))

    def assistant(self, parts: tuple[Part, ...]) -> None:
        """An assistant message with usage measured against the history before it."""
        message = Message("assistant", parts)
        output = self.memo.count(message, REFERENCE) - MESSAGE_OVERHEAD
        self._add(replace(message, usage=Usage(input_tokens=self._context, output_tokens=output)))

    def answer(self, text: str) -> None:
        """A plain assistant answer (no tool call)."""
        self.assistant((TextPart(text),))

    def new_call(self, name: str, arguments: dict[str, object]) -> ToolCallPart:
        """A tool-call part with the next id; `arguments` becomes its JSON text."""
        self._calls += 1
        call_id = f"toolu_{self._tag}_{self._calls:03d}"
        return ToolCallPart(call_id, name, json.dumps(arguments, ensure_ascii=False))

    def call(self, text: str, *calls: ToolCallPart) -> None:
        """An assistant message with optional text (empty: none) and tool calls."""
        lead: tuple[Part, ...] = (TextPart(text),) if text else ()
        self.assistant((*lead, *calls))

    def result(self, call: ToolCallPart, text: str, *, is_error: bool = False) -> None:
        """A tool message answering `call`."""
        self._add(tool_message(call, text, is_error=is_error))

    def run(self, title: str, session_id: str, *, parent: str = "") -> Run:
        """The finished run; a run with a parent is a subagent of it."""
        return Run(
            title=title,
            messages=tuple(self._messages),
            format=FORMAT,
            model=MODEL,
            session_id=session_id,
            parent_session_id=parent,
            subagent=bool(parent),
            # The seed incident's model accepted 1,000,000 tokens (the 1M-context tier).
            context_window=WINDOW,
        )
