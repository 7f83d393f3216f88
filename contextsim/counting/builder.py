"""Building skeletons (contextsim.counting.skeleton) from a run's messages, fed in order.

One pass over the messages gives the skeletons of any number of estimators: what does
not depend on the estimator (structure, hashes, characters, the LangChain form, the
stubs' text) is worked out once per message, then each estimator counts. Messages can
be fed a batch at a time and let go, so a run too big to hold need never be whole in
memory (an import writes a batch, feeds it, and drops it).

Units: tokens are integers under each skeleton's estimator; indexes are message indexes.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from contextsim.counting.approx_form import LangChainForms, client_calls
from contextsim.counting.estimators import (
    MESSAGE_OVERHEAD,
    CountMemo,
    Estimator,
    count_message,
    thought_tokens,
)
from contextsim.counting.memory import grown
from contextsim.counting.offload_stubs import render_tool_stub
from contextsim.counting.redaction import counted_text
from contextsim.counting.skeleton import KIND_INDEX, PREVIEW_LINES, STUB_MIN_CHARS, Skeleton
from contextsim.model import Message, Run, ThinkingPart, ToolSpecPart, Usage

# A final answer that gives lack of room as its reason to stop (English, Russian,
# Chinese, Hungarian: the seed incident's languages).
_SPACE_WORDS = re.compile(
    "|".join(
        (
            r"sav\w* (?:some )?(?:space|room|context|tokens)",
            r"context (?:window )?(?:is )?(?:nearly |almost )?full",
            r"running out of (?:space|context|room)",
            r"(?:сэконом|эконом)\w* мест",
            r"мест\w* (?:заканчива|конча)",
            r"节省空间|空间不足",
            r"helyet takarít",
        )
    ),
    re.IGNORECASE,
)


def build(run: Run, estimator: Estimator, memo: CountMemo | None = None) -> Skeleton:
    """The skeleton of `run` under `estimator` (tokenizes each distinct message once,
    unless `memo` has it, and the stub of each tool result over STUB_MIN_CHARS
    characters)."""
    builder = SkeletonBuilder([estimator], memo)
    builder.add(run.messages)
    return builder.finish(run)[estimator.name]


def reference_tokens(
    run: Run, estimator: Estimator, memo: CountMemo | None = None
) -> tuple[int, ...]:
    """Per-message tokens by a reference estimator (for underestimate detection)."""
    return tuple(count_message(m, estimator, memo=memo) for m in run.messages)


def preview_text(text: str, lines: int = PREVIEW_LINES) -> str:
    """The first and last `lines` lines of `text`, or all of it when short."""
    parts = text.splitlines()
    if len(parts) <= 2 * lines:
        return text
    return "\n".join([*parts[:lines], "...", *parts[-lines:]])


@dataclass(slots=True)
class _Counted:
    """The fields of one estimator's skeleton that its counts decide, per message."""

    tokens: list[int] = field(default_factory=list)
    previews: list[int] = field(default_factory=list)
    stubs: list[tuple[int, ...]] = field(default_factory=list)
    arguments: list[tuple[int, ...]] = field(default_factory=list)
    thinking: list[int] = field(default_factory=list)
    turn: list[int] = field(default_factory=list)
    definitions: list[tuple[int, str, int]] = field(default_factory=list)


class SkeletonBuilder:
    """The skeletons of one run under each of `estimators`, its messages fed in order
    by `add` (any number of calls), then `finish` with the run's other facts. `finish`
    changes nothing: a run that grows is fed its new messages and finished again, at
    the cost of those messages (plus copying the per-message lists)."""

    def __init__(self, estimators: Sequence[Estimator], memo: CountMemo | None = None) -> None:
        self.estimators = tuple(estimators)
        self.memo = memo if memo is not None else CountMemo()
        """Counts already made (a run's repeated messages are tokenized once; a caller
        that counted the messages before passes its own)."""
        self._counted = {e.name: _Counted() for e in self.estimators}
        self._calls: dict[str, tuple[int, str, str]] = {}
        self._forms = LangChainForms()
        self._last: Message | None = None
        self._finished: dict[str, weakref.ref[Skeleton]] = {}
        self._usage: list[Usage | None] = []
        """The usage of each assistant message, in order: the requests' (their ends are
        `_answered`), kept as they come rather than picked out at every finish."""
        self.kinds: list[int] = []
        self.roles: list[str] = []
        self.chars: list[int] = []
        self.user_turn: list[bool] = []
        self.answers: list[int] = []
        self.result_count: list[int] = []
        self.tool_names: list[str] = []
        self.call_key: list[str] = []
        self.result_key: list[str] = []
        self.is_error: list[bool] = []
        self.langchain: list[tuple[tuple[int, ...], ...]] = []
        self.call_inputs: list[tuple[int, ...]] = []
        self.call_names: list[tuple[str, ...]] = []
        self.stub_chars: list[tuple[int, ...]] = []
        self.summaries: list[int] = []
        self.times: list[float | None] = []
        self.opaque: list[int] = []
        self._answered: list[int] = []
        """The assistant messages' indexes: each ends a request (model.request_bounds)."""

    @property
    def size(self) -> int:
        """Messages fed so far."""
        return len(self.roles)

    def add(self, messages: Iterable[Message], keys: Sequence[str] | None = None) -> None:
        """Feed the next messages (`keys`, when the caller has them, their content keys:
        estimators.content_key, for the count memo)."""
        for n, message in enumerate(messages):
            self._add(message, keys[n] if keys is not None else None)

    def _add(self, message: Message, key: str | None) -> None:
        i = self.size
        for c in message.tool_calls:
            # Only a hash of the call is kept: holding every call's arguments would
            # hold much of a big run's text. A server-side call is answered in the
            # same message: registered before its result is looked up.
            self._calls[c.id] = (i, c.name, _hash(c.name, c.arguments))
        results = message.tool_results
        found = [self._calls[r.call_id] for r in results if r.call_id in self._calls]
        self.answers.append(found[0][0] if found else -1)
        self.tool_names.append(",".join(sorted({f[1] for f in found})))
        self.call_key.append(_hash(*(f[2] for f in found)) if results else "")
        self.result_key.append(_hash(*(r.text for r in results)) if results else "")
        self.is_error.append(bool(results) and all(r.is_error for r in results))
        self.kinds.append(KIND_INDEX[message.kind])
        self.roles.append(message.role)
        self.chars.append(_chars(message))
        self.user_turn.append(message.is_user_turn)
        self.result_count.append(len(results))
        self.times.append(message.time)
        self.opaque.append(
            sum(p.opaque_chars for p in message.parts if isinstance(p, ThinkingPart))
        )
        if message.compact_summary:
            self.summaries.append(i)
        pieces, inputs = self._forms.add(message)
        self.langchain.append(pieces)
        self.call_inputs.append(inputs)
        stubs = [
            render_tool_stub(r.text, r.call_id) if len(r.text) > STUB_MIN_CHARS else ""
            for r in results
        ]
        found_stub = any(stubs)
        self.stub_chars.append(tuple(len(t) for t in stubs) if found_stub else ())
        previews = [preview_text(r.text) for r in results]
        # A message of short results only: their previews are all it counts, so its
        # preview tokens are its tokens (counting them again was a fifth of an import).
        whole = len(results) == len(message.parts) and all(
            p is r.text and counted_text(p) is p for p, r in zip(previews, results, strict=True)
        )
        client = client_calls(message)
        arguments = [c.arguments for c in client]
        self.call_names.append(tuple(c.name for c in client))
        thoughts = [p for p in message.parts if isinstance(p, ThinkingPart)]
        specs = [p for p in message.parts if isinstance(p, ToolSpecPart)]
        for estimator in self.estimators:
            counted = self._counted[estimator.name]
            tokens = self.memo.count(message, estimator, key)
            counted.tokens.append(tokens)
            within = max(tokens - MESSAGE_OVERHEAD, 0)
            sizes = [thought_tokens(t, estimator) for t in thoughts]
            counted.thinking.append(min(sum(sizes), within))
            turn = sum(n for n, t in zip(sizes, thoughts, strict=True) if t.turn_only)
            counted.turn.append(min(turn, within))
            counted.previews.append(
                0
                if not results
                else tokens
                if whole
                else MESSAGE_OVERHEAD + sum(estimator.count(p) for p in previews)
            )
            counted.stubs.append(tuple(estimator.count(t) for t in stubs) if found_stub else ())
            counted.arguments.append(tuple(estimator.count(a) for a in arguments))
            # As count_parts counts them: the message's tokens are these plus its overhead.
            counted.definitions.extend((i, p.name, estimator.count(p.definition)) for p in specs)
        if message.role == "assistant":
            self._answered.append(i)
            self._usage.append(message.usage)
        self._last = message

    def finish(self, run: Run) -> dict[str, Skeleton]:
        """Each estimator's skeleton, by estimator name; `run` gives the facts beside
        the messages (title, compactions, elisions, model...; its messages unread)."""
        last = self._last
        final = last is not None and last.role == "assistant" and not last.tool_calls
        space = final and last is not None and _SPACE_WORDS.search(last.text) is not None
        # model.request_bounds, from the assistant messages noted as they came.
        ends = tuple(self._answered)
        responses: tuple[int | None, ...] = ends
        usage = tuple(self._usage)
        if self.roles and self.roles[-1] != "assistant":
            ends, responses, usage = (*ends, self.size), (*responses, None), (*usage, None)
        shared = {
            "title": run.title,
            "kinds": tuple(self.kinds),
            "roles": tuple(self.roles),
            "chars": tuple(self.chars),
            "user_turn": tuple(self.user_turn),
            "answers": tuple(self.answers),
            "result_count": tuple(self.result_count),
            "tool_names": tuple(self.tool_names),
            "call_key": tuple(self.call_key),
            "result_key": tuple(self.result_key),
            "is_error": tuple(self.is_error),
            "ends": ends,
            "responses": responses,
            "usage": usage,
            "final_answer": final,
            "final_mentions_space": space,
            "subagent": run.subagent,
            "compactions": tuple(c.before_message for c in run.compactions),
            "compaction_pre_tokens": tuple(c.pre_tokens for c in run.compactions),
            "compaction_triggers": tuple(c.trigger for c in run.compactions),
            "langchain": tuple(self.langchain),
            "call_inputs": tuple(self.call_inputs),
            "call_names": tuple(self.call_names),
            "stub_chars": tuple(self.stub_chars),
            "model": run.model,
            "context_window": run.context_window,
            "harness_version": run.harness_version,
            "compaction_request": run.compaction_request,
            "summaries": tuple(self.summaries),
            # Counted in C: a live run's builder finishes after every append.
            "times": tuple(self.times) if self.times.count(None) < len(self.times) else (),
            "opaque_thinking": tuple(self.opaque) if any(self.opaque) else (),
        }
        out = {}
        for estimator in self.estimators:
            counted = self._counted[estimator.name]
            out[estimator.name] = Skeleton(
                estimator=estimator.name,
                tokens=tuple(counted.tokens),
                preview_tokens=tuple(counted.previews),
                stub_tokens=tuple(counted.stubs),
                argument_tokens=tuple(counted.arguments),
                thinking_tokens=tuple(counted.thinking),
                turn_thinking=tuple(counted.turn) if any(counted.turn) else (),
                definitions=tuple(counted.definitions),
                elisions=tuple(
                    (e.message, e.from_step, MESSAGE_OVERHEAD + estimator.count(e.text))
                    for e in run.elisions
                    if e.message < self.size
                ),
                **shared,  # type: ignore[arg-type]
            )
            before = self._finished.get(estimator.name)
            old = before() if before is not None else None
            if old is not None:
                grown(out[estimator.name], old)
            self._finished[estimator.name] = weakref.ref(out[estimator.name])
        return out


def _hash(*items: str) -> str:
    h = hashlib.sha1()
    for item in items:
        h.update(item.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()[:16]


def _chars(message: Message) -> int:
    total = 0
    for part in message.parts:
        if part.type in ("text", "thinking", "tool_result"):
            total += len(part.text)
        elif part.type == "tool_call":
            total += len(part.name) + len(part.arguments)
        elif part.type == "tool_spec":
            total += len(part.definition)
    return total
