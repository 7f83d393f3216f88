"""Differential tests: `langchain_trim` and `langchain_clear_tool_uses` against the
LangChain functions they model, on hundreds of seeded random histories.

Each history is built once as a contextsim Run and once as LangChain messages (the form
contextsim.counting.approx_form describes); for every request, the messages LangChain keeps,
drops or clears must be exactly the ones the policy's plan keeps, drops or clears.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents.middleware.context_editing import ClearToolUsesEdit
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.counting.skeleton import Skeleton, approx_tokens
from contextsim.engine.simulate import Simulation, simulate
from contextsim.model import Message, Run, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from contextsim.registry import POLICIES
from contextsim.systems.langchain.policies import (
    LangChainClearParams,
    LangChainTrimParams,
    leading_system,
)

TOOLS = ("read_file", "grep", "bash", "memory", "edit_file")
WORDS = ("def", "return", "token", "budget", "context", "über", "naïve", "上下文", "😀", "x")
CHUNKS = 8
"""Seeds are split in chunks so a failure names a small range of them."""
PER_CHUNK = 40
EST = ESTIMATORS["chars4"]


# --- Random histories ------------------------------------------------------------------


def _block(chars: int) -> str:
    """Seeded words, some lines, some non-ASCII: the text every history is cut from."""
    rng = random.Random(0)
    words = [rng.choice(WORDS) + ("\n" if rng.random() < 0.08 else " ") for _ in range(chars // 4)]
    return "".join(words)


BLOCK = _block(400_000)


def _text(rng: random.Random, chars: int) -> str:
    """`chars` characters cut from BLOCK at a random place."""
    start = rng.randrange(len(BLOCK) - chars) if chars else 0
    return BLOCK[start : start + chars]


def _size(rng: random.Random) -> int:
    """A tool result's size in characters: tiny, small, a file read, or huge."""
    band = rng.random()
    if band < 0.2:
        return rng.randint(0, 12)
    if band < 0.6:
        return rng.randint(13, 800)
    if band < 0.93:
        return rng.randint(800, 12_000)
    return rng.randint(30_000, 90_000)


def _arguments(rng: random.Random) -> str:
    """Call arguments: mostly JSON objects of varied shapes, sometimes "" or not an
    object (which LangChain cannot parse into a tool call)."""
    roll = rng.random()
    if roll < 0.05:
        return ""
    if roll < 0.08:
        return rng.choice(("[1, 2]", "not json", '"text"'))
    value: dict[str, Any] = {"path": _text(rng, rng.randint(1, 30))}
    if rng.random() < 0.5:
        value["lines"] = [rng.randint(0, 999), rng.random(), None, True]
    if rng.random() < 0.3:
        value["body"] = {"text": _text(rng, rng.randint(0, 2_000)), "quote": 'say "hi"\\'}
    return json.dumps(value, ensure_ascii=rng.random() < 0.5)


def _assistant(rng: random.Random, ids: list[str], names: list[str]) -> Message:
    parts: list[Any] = []
    if rng.random() < 0.2:
        parts.append(ThinkingPart(_text(rng, rng.randint(1, 300))))
    if rng.random() < 0.6 or not ids:
        parts.append(TextPart(_text(rng, rng.randint(0, 400))))
    parts.extend(ToolCallPart(i, n, _arguments(rng)) for i, n in zip(ids, names, strict=True))
    return Message("assistant", tuple(parts))


def _round(rng: random.Random, first: int) -> list[Message]:
    """An assistant message with 0-3 parallel calls and one message per result."""
    ids = [f"call_{first + j}" for j in range(rng.choice((0, 1, 1, 1, 2, 3)))]
    names = [rng.choice(TOOLS) for _ in ids]
    out = [_assistant(rng, ids, names)]
    if ids and rng.random() < 0.04:
        # A result arriving after another assistant message: LangChain looks for the
        # call only on the nearest AIMessage before the result.
        out.append(Message("assistant", (TextPart("waiting"),)))
    for call_id in ids:
        if rng.random() < 0.03:
            continue  # a call never answered
        role = "tool" if rng.random() < 0.8 else "user"
        error = rng.random() < 0.05
        result = ToolResultPart(call_id, _text(rng, _size(rng)), error)
        out.append(Message(role, (result,)))  # type: ignore[arg-type]
    return out


def random_run(seed: int) -> Run:
    """A seeded history: system prompt(s), user turns, tool rounds, maybe a final answer."""
    rng = random.Random(seed)
    messages: list[Message] = []
    for _ in range(rng.choice((0, 1, 1, 1, 2))):
        messages.append(Message("system", (TextPart(_text(rng, rng.randint(0, 3_000))),)))
    messages.append(Message("user", (TextPart(_text(rng, rng.randint(0, 2_000))),)))
    calls = 0
    for _ in range(rng.randint(0, 30)):
        if rng.random() < 0.12:
            messages.append(Message("assistant", (TextPart(_text(rng, 200)),)))
            messages.append(Message("user", (TextPart(_text(rng, rng.randint(0, 1_500))),)))
        step = _round(rng, calls)
        calls += len(step[0].tool_calls)
        messages.extend(step)
    if rng.random() < 0.5:
        messages.append(Message("assistant", (TextPart(_text(rng, 300)),)))
    return Run(f"seed {seed}", tuple(messages))


# --- The same history as LangChain messages --------------------------------------------


def _langchain_args(arguments: str) -> dict[str, Any] | None:
    if not arguments:
        return {}
    try:
        value = json.loads(arguments, strict=False)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _ai(message: Message, index: int, names: dict[str, str]) -> AIMessage:
    calls: list[Any] = []
    invalid: list[Any] = []
    for c in message.tool_calls:
        names[c.id] = c.name
        args = _langchain_args(c.arguments)
        if args is None:
            invalid.append({"name": c.name, "args": c.arguments, "id": c.id, "error": "bad"})
        else:
            calls.append({"name": c.name, "args": args, "id": c.id})
    return AIMessage(message.text, tool_calls=calls, invalid_tool_calls=invalid, id=f"{index}.0")


def to_langchain(run: Run) -> list[list[BaseMessage]]:
    """Per run message, its LangChain messages (ids "<message index>.<n>")."""
    names: dict[str, str] = {}
    out: list[list[BaseMessage]] = []
    for i, m in enumerate(run.messages):
        if m.role == "system":
            out.append([SystemMessage(m.text, id=f"{i}.0")])
        elif m.role == "assistant":
            out.append([_ai(m, i, names)])
        else:
            group: list[BaseMessage] = [
                ToolMessage(
                    r.text, tool_call_id=r.call_id, name=names.get(r.call_id), id=f"{i}.{n}"
                )
                for n, r in enumerate(m.tool_results)
            ]
            if not group or m.text:
                group.append(HumanMessage(m.text, id=f"{i}.{len(group)}"))
            out.append(group)
    return out


def _index(message: BaseMessage) -> int:
    assert message.id is not None
    return int(message.id.split(".")[0])


# --- Running both sides -----------------------------------------------------------------


@dataclass
class Tally:
    histories: int = 0
    requests: int = 0
    acted: int = 0
    partial: int = 0


TRIM = Tally()
CLEAR = Tally()


def _simulate(sk: Skeleton, policy: str, params: Any, budget: int) -> Simulation:
    return simulate(
        sk, POLICIES[policy], params, budget=budget, hard_limit=budget * 4, count=EST.count
    )


def _trim_params(rng: random.Random) -> LangChainTrimParams:
    if rng.random() < 0.5:
        return LangChainTrimParams()
    start_on = rng.choice(((), ("human",), ("ai",), ("human", "tool"), ("system", "human")))
    return LangChainTrimParams(rng.random() < 0.7, start_on, rng.random() < 0.5)


def check_trim(seed: int) -> None:
    run = random_run(seed)
    rng = random.Random(-seed)
    sk = build(run, EST)
    forms = to_langchain(run)
    total = sum(approx_tokens(sk))
    budget = max(1, int(total * rng.uniform(0.02, 1.1)))
    params = _trim_params(rng)
    sim = _simulate(sk, "langchain_trim", params, budget)
    TRIM.histories += 1
    for k, end in enumerate(sk.ends):
        history = [m for group in forms[:end] for m in group]
        got = trim_messages(
            history,
            max_tokens=budget,
            strategy="last",
            token_counter=count_tokens_approximately,
            include_system=params.include_system,
            start_on=list(params.start_on) or None,
            allow_partial=params.allow_partial,
        )
        originals = {id(m) for m in history}
        kept = {_index(m) for m in got if id(m) in originals}
        partial = [_index(m) for m in got if id(m) not in originals]
        plan = sim.records[k].plan
        letters = sim.dispositions(k)
        assert {i for i, d in enumerate(letters) if d == "k"} == kept, (seed, k, end)
        ours = [plan.gap_end - 1] if plan.extra else []
        assert ours == partial, (seed, k, end)
        TRIM.requests += 1
        TRIM.acted += "t" in letters
        TRIM.partial += bool(partial)


def _clear_params(rng: random.Random, total: int) -> LangChainClearParams:
    exclude = tuple(t for t in TOOLS if rng.random() < 0.15)
    at_least = rng.choice((0, 0, rng.randint(1, 200), rng.randint(200, max(201, total // 3))))
    placeholder = rng.choice(("[cleared]", "[cleared]", "", "a much longer placeholder " * 3))
    return LangChainClearParams(
        trigger=int(total * rng.uniform(0.0, 1.1)),
        keep=rng.choice((0, 1, 2, 3, 3, 5)),
        clear_at_least=at_least,
        exclude_tools=exclude,
        clear_tool_inputs=rng.random() < 0.5,
        placeholder=placeholder,
    )


def check_clear(seed: int) -> None:
    run = random_run(seed)
    rng = random.Random(seed * 7919)
    sk = build(run, EST)
    forms = to_langchain(run)
    params = _clear_params(rng, sum(approx_tokens(sk)))
    sim = _simulate(sk, "langchain_clear_tool_uses", params, 10**9)
    lead = leading_system(sk)
    edit = ClearToolUsesEdit(
        trigger=params.trigger,
        clear_at_least=params.clear_at_least,
        keep=params.keep,
        clear_tool_inputs=params.clear_tool_inputs,
        exclude_tools=params.exclude_tools,
        placeholder=params.placeholder,
    )
    CLEAR.histories += 1
    for k, end in enumerate(sk.ends):
        # What the middleware edits: the state's messages, the system prompt apart.
        messages = [m for group in forms[lead:end] for m in group]
        edited = list(messages)
        edit.apply(edited, count_tokens=count_tokens_approximately)
        changed = {_index(b) for a, b in zip(messages, edited, strict=True) if a is not b}
        for a, b in zip(messages, edited, strict=True):
            if a is not b and isinstance(b, ToolMessage):
                assert b.content == params.placeholder
        letters = sim.dispositions(k)
        assert {i for i, d in enumerate(letters) if d == "c"} == changed, (seed, k, end)
        CLEAR.requests += 1
        CLEAR.acted += bool(changed)


# --- Tests ---------------------------------------------------------------------------------


def test_the_langchain_form_counts_what_count_tokens_approximately_counts() -> None:
    for seed in range(60):
        run = random_run(seed)
        sk = build(run, EST)
        forms = to_langchain(run)
        assert approx_tokens(sk) == [count_tokens_approximately(g) for g in forms], seed


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_langchain_trim_keeps_what_trim_messages_keeps(chunk: int) -> None:
    for seed in range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK):
        check_trim(seed)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_langchain_clear_tool_uses_clears_what_clear_tool_uses_edit_clears(chunk: int) -> None:
    for seed in range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK):
        check_clear(seed)
