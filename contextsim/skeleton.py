"""The skeleton: a run reduced to counts and structure, what simulation works on.

Built once per (run, estimator): every message's tokens, kind, user-turn and tool-round
structure, plus the few facts detectors need (hashes of calls and results, error flags,
the size of an offload preview). Simulation never reads text and never tokenizes.

Units: tokens are integers under the skeleton's estimator; indexes are message indexes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from contextsim.estimators import MESSAGE_OVERHEAD, Estimator, count_message
from contextsim.model import KINDS, Kind, Message, Run, Usage, request_bounds

KIND_INDEX = {k: i for i, k in enumerate(KINDS)}
PREVIEW_LINES = 5
"""Lines of a tool result kept at each end of an offload preview (Deep Agents)."""

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


@dataclass(frozen=True, slots=True)
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

    @property
    def size(self) -> int:
        return len(self.tokens)

    @property
    def steps(self) -> int:
        return len(self.ends)

    def kind(self, i: int) -> Kind:
        return KINDS[self.kinds[i]]


def preview_text(text: str, lines: int = PREVIEW_LINES) -> str:
    """The first and last `lines` lines of `text`, or all of it when short."""
    parts = text.splitlines()
    if len(parts) <= 2 * lines:
        return text
    return "\n".join([*parts[:lines], "...", *parts[-lines:]])


def _hash(*items: str) -> str:
    h = hashlib.sha1()
    for item in items:
        h.update(item.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()[:16]


def build(run: Run, estimator: Estimator) -> Skeleton:
    """The skeleton of `run` under `estimator` (tokenizes each distinct message once)."""
    calls: dict[str, tuple[int, str, str]] = {}
    answers: list[int] = []
    names: list[str] = []
    call_keys: list[str] = []
    result_keys: list[str] = []
    errors: list[bool] = []
    previews: list[int] = []
    for i, message in enumerate(run.messages):
        for c in message.tool_calls:
            calls[c.id] = (i, c.name, c.arguments)
        results = message.tool_results
        found = [calls[r.call_id] for r in results if r.call_id in calls]
        answers.append(found[0][0] if found else -1)
        names.append(",".join(sorted({f[1] for f in found})))
        call_keys.append(_hash(*(f"{f[1]}\0{f[2]}" for f in found)) if results else "")
        result_keys.append(_hash(*(r.text for r in results)) if results else "")
        errors.append(bool(results) and all(r.is_error for r in results))
        previews.append(_preview_tokens(message, estimator) if results else 0)
    bounds = request_bounds([m.role for m in run.messages])
    last = run.messages[-1] if run.messages else None
    final = last is not None and last.role == "assistant" and not last.tool_calls
    return Skeleton(
        title=run.title,
        estimator=estimator.name,
        tokens=tuple(count_message(m, estimator) for m in run.messages),
        kinds=tuple(KIND_INDEX[m.kind] for m in run.messages),
        roles=tuple(m.role for m in run.messages),
        chars=tuple(_chars(m) for m in run.messages),
        user_turn=tuple(m.is_user_turn for m in run.messages),
        answers=tuple(answers),
        result_count=tuple(len(m.tool_results) for m in run.messages),
        tool_names=tuple(names),
        call_key=tuple(call_keys),
        result_key=tuple(result_keys),
        is_error=tuple(errors),
        preview_tokens=tuple(previews),
        ends=tuple(e for e, _ in bounds),
        responses=tuple(r for _, r in bounds),
        usage=tuple(None if r is None else run.messages[r].usage for _, r in bounds),
        final_answer=final,
        final_mentions_space=bool(final and last and _SPACE_WORDS.search(last.text)),
        subagent=run.subagent,
        compactions=tuple(c.before_message for c in run.compactions),
    )


def _chars(message: Message) -> int:
    total = 0
    for part in message.parts:
        if part.type in ("text", "thinking", "tool_result"):
            total += len(part.text)
        elif part.type == "tool_call":
            total += len(part.name) + len(part.arguments)
    return total


def _preview_tokens(message: Message, estimator: Estimator) -> int:
    return MESSAGE_OVERHEAD + sum(
        estimator.count(preview_text(r.text)) for r in message.tool_results
    )


def reference_tokens(run: Run, estimator: Estimator) -> tuple[int, ...]:
    """Per-message tokens by a reference estimator (for underestimate detection)."""
    return tuple(count_message(m, estimator) for m in run.messages)


def prefix_sums(values: Sequence[int]) -> list[int]:
    """[0, v0, v0+v1, ...]: sum of values[a:b] is out[b] - out[a]."""
    out = [0]
    total = 0
    for v in values:
        total += v
        out.append(total)
    return out
