"""Differential test: one compaction pass of `inspect_compaction` ("trim" and "edit")
against inspect-ai's own strategies (trim_messages behind CompactionTrim, and
CompactionEdit.compact) on seeded random histories, request by request: the messages
Inspect keeps, drops or clears are the ones the plan keeps, drops or clears."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any

import pytest
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    CompactionEdit,
)
from inspect_ai.model._trim import trim_messages
from inspect_ai.tool import ToolCall

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.policy import Context
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart
from contextsim.systems.inspect_ai.policies import (
    TOOL_RESULT_REMOVED,
    InspectParams,
    InspectPlanner,
)
from tests.conftest import off_the_main_thread

EST = ESTIMATORS["chars4"]
TOOLS = ("read", "grep", "bash")


def random_run(seed: int) -> Run:
    rng = random.Random(seed)
    messages: list[Message] = []
    if rng.random() < 0.7:
        messages.append(Message("system", (TextPart("be brief"),)))
    messages.append(Message("user", (TextPart("task"),)))
    call = 0
    for _ in range(rng.randint(0, 25)):
        if rng.random() < 0.15:
            messages.append(Message("assistant", (TextPart("ok"),)))
            messages.append(Message("user", (TextPart("more"),)))
        ids = [f"c{call + j}" for j in range(rng.choice((1, 1, 1, 2, 3)))]
        call += len(ids)
        calls = tuple(ToolCallPart(i, rng.choice(TOOLS), "{}") for i in ids)
        messages.append(Message("assistant", calls))
        if rng.random() < 0.5:
            for i in ids:
                messages.append(Message("tool", (ToolResultPart(i, "r" * rng.randint(1, 900)),)))
        else:
            results = tuple(ToolResultPart(i, "r" * rng.randint(1, 900)) for i in ids)
            messages.append(Message("tool", results))
    return Run(f"inspect {seed}", tuple(messages))


def to_inspect(run: Run) -> list[list[ChatMessage]]:
    """Per run message, its Inspect messages (ids "<message index>.<n>")."""
    names: dict[str, str] = {}
    out: list[list[ChatMessage]] = []
    for i, m in enumerate(run.messages):
        if m.role == "system":
            out.append([ChatMessageSystem(content=m.text, id=f"{i}.0")])
        elif m.role == "user":
            out.append([ChatMessageUser(content=m.text, id=f"{i}.0")])
        elif m.role == "assistant":
            calls = [ToolCall(id=c.id, function=c.name, arguments={}) for c in m.tool_calls]
            names.update({c.id: c.name for c in m.tool_calls})
            out.append(
                [ChatMessageAssistant(content=m.text, tool_calls=calls or None, id=f"{i}.0")]
            )
        else:
            out.append(
                [
                    ChatMessageTool(
                        content=r.text,
                        tool_call_id=r.call_id,
                        function=names[r.call_id],
                        id=f"{i}.{k}",
                    )
                    for k, r in enumerate(m.tool_results)
                ]
            )
    return out


def _index(message: ChatMessage) -> int:
    assert message.id is not None
    return int(message.id.split(".")[0])


def planner(run: Run, params: InspectParams) -> InspectPlanner:
    sk = build(run, EST)
    return InspectPlanner(Context(sk, 10**9, 10**9, EST.count), params)


MODEL: Any = SimpleNamespace(api=SimpleNamespace(compact_reasoning_history=lambda: True))


@pytest.mark.parametrize("chunk", range(4))
def test_one_trim_pass_keeps_what_inspect_s_trim_keeps(chunk):
    for seed in range(chunk * 40, (chunk + 1) * 40):
        run = random_run(seed)
        preserve = random.Random(seed).choice((0.8, 0.8, 0.5, 0.3, 0.0, 1.0))
        forms = to_inspect(run)
        sk_ends = build(run, EST).ends
        for end in sk_ends:
            history = [m for group in forms[:end] for m in group]
            trimmed = off_the_main_thread(asyncio.run, trim_messages(history, preserve=preserve))
            kept = {_index(m) for m in trimmed}
            ours = planner(run, InspectParams(strategy="trim", preserve=preserve))
            ours._compact(end)
            letters = ours.acct.dispositions(ours.current(end))
            assert {i for i, d in enumerate(letters) if d == "k"} == kept, (seed, end)


@pytest.mark.parametrize("chunk", range(4))
def test_one_edit_pass_clears_what_compaction_edit_clears(chunk):
    for seed in range(chunk * 40, (chunk + 1) * 40):
        run = random_run(seed)
        rng = random.Random(seed)
        keep = rng.choice((0, 1, 3, 3, 5))
        exclude = tuple(t for t in TOOLS if rng.random() < 0.2)
        strategy = CompactionEdit(keep_tool_uses=keep, exclude_tools=list(exclude), memory=False)
        if any(
            sum(c.name in exclude for c in m.tool_calls) > 1 and m.role == "assistant"
            for m in run.messages
        ):
            continue  # one message holding two excluded results: not representable
        forms = to_inspect(run)
        for end in build(run, EST).ends:
            history = [m for group in forms[:end] for m in group]
            edited, _ = off_the_main_thread(asyncio.run, strategy.compact(MODEL, history, []))
            # Edited messages get new ids: find them by the call they answer.
            holder = {r.call_id: i for i, m in enumerate(run.messages) for r in m.tool_results}
            removed = [
                holder[m.tool_call_id]
                for m in edited
                if isinstance(m, ChatMessageTool)
                and m.content == TOOL_RESULT_REMOVED
                and m.tool_call_id
            ]
            # Inspect clears result by result; a message of ours holding several results
            # is cleared only when all of them are (one of its results among the newest
            # keep_tool_uses keeps it whole: the documented approximation).
            cleared = {i for i in removed if removed.count(i) == len(run.messages[i].tool_results)}
            params = InspectParams(strategy="edit", keep_tool_uses=keep, exclude_tools=exclude)
            ours = planner(run, params)
            ours._compact(end)
            letters = ours.acct.dispositions(ours.current(end))
            results = {i for i in range(end) if run.messages[i].tool_results}
            assert {i for i in results if letters[i] == "c"} == cleared, (seed, end, keep)
