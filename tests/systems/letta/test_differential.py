"""Differential test: `letta_summarizer` (partial_evict, static_buffer) and
`letta_sliding_window` against letta 0.16.8's own summarizer code on seeded random
histories, with no database and no model call.

Letta's server package cannot be installed beside this project's pinned packages, so
this runs only where it is installed (e.g. a separate venv that also sees this
project); elsewhere it is skipped. Driven: `Summarizer._partial_evict_buffer_summarization`
and `Summarizer._static_buffer_summarization` (letta/services/summarizer/summarizer.py,
through `Summarizer.summarize` with the force/clear rule of letta_agent.py's
`_rebuild_context_window`), and `compact_messages` (compact.py: sliding window, its
"all" fallbacks, the post-compaction threshold check) with `get_compaction_trigger_threshold`
(thresholds.py). Stand-ins: the summary LLM call (one letter), the agent lookup and
message store, and Letta's token counter (the simulation's own count of the same
messages). Per request, Letta's in-context list must be the system message, the
summary when there is one, and exactly the messages the simulation keeps.
"""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any

import pytest

letta = pytest.importorskip("letta.services.summarizer.summarizer")

from letta.schemas.enums import AgentType, MessageRole  # noqa: E402
from letta.schemas.letta_message_content import TextContent  # noqa: E402
from letta.schemas.llm_config import LLMConfig  # noqa: E402
from letta.schemas.message import Message as LettaMessage  # noqa: E402
from letta.services.summarizer import compact as letta_compact  # noqa: E402
from letta.services.summarizer import summarizer as letta_summarizer  # noqa: E402
from letta.services.summarizer import summarizer_all as letta_all  # noqa: E402
from letta.services.summarizer import summarizer_sliding_window as letta_sliding  # noqa: E402
from letta.services.summarizer.enums import SummarizationMode  # noqa: E402
from letta.services.summarizer.summarizer_config import CompactionSettings  # noqa: E402
from letta.services.summarizer.thresholds import get_compaction_trigger_threshold  # noqa: E402

from contextsim.counting.builder import build  # noqa: E402
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD  # noqa: E402
from contextsim.engine.simulate import simulate  # noqa: E402
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart  # noqa: E402
from contextsim.registry import POLICIES  # noqa: E402
from contextsim.systems.letta.policies import LettaSlidingParams, LettaSummarizerParams  # noqa: E402
from tests.conftest import off_the_main_thread  # noqa: E402

EST = ESTIMATORS["chars4"]
ROLES = {
    "system": MessageRole.system,
    "user": MessageRole.user,
    "assistant": MessageRole.assistant,
    "tool": MessageRole.tool,
}


def random_run(seed: int) -> Run:
    rng = random.Random(seed)
    messages = []
    if rng.random() < 0.5:
        messages.append(Message("system", (TextPart("sys " * rng.randint(1, 400)),)))
    messages.append(Message("user", (TextPart("task " * rng.randint(1, 300)),)))
    call = 0
    for _ in range(rng.randint(3, 60)):
        if rng.random() < 0.3:
            messages.append(Message("assistant", (TextPart("done " * rng.randint(1, 50)),)))
            messages.append(Message("user", (TextPart("next " * rng.randint(1, 300)),)))
        ids = [f"c{call + j}" for j in range(rng.choice((1, 1, 2)))]
        call += len(ids)
        messages.append(Message("assistant", tuple(ToolCallPart(i, "read", "{}") for i in ids)))
        results = tuple(ToolResultPart(i, "r" * rng.randint(10, 12_000)) for i in ids)
        messages.append(Message("tool", results))
    return Run(f"letta {seed}", tuple(messages))


class Harness:
    """Letta's in-context list, built from the run's messages, and its token count."""

    def __init__(self, run: Run, summary_tokens: int) -> None:
        self.sk = sk = build(run, EST)
        self.head = 1 if run.messages[0].role == "system" else 0
        self.index: dict[int, int] = {}  # id(letta message) -> history index
        self.letta = [self._message(i, m.role) for i, m in enumerate(run.messages)]
        self.note = MESSAGE_OVERHEAD + summary_tokens
        # Letta's system message: the run's, else one the log left out (no tokens).
        system = self.letta[0] if self.head else LettaMessage(role=MessageRole.system)
        self.context: list[LettaMessage] = [system]
        self.added = self.head
        self.cost = dict(enumerate(sk.tokens))

    def _message(self, i: int, role: str) -> LettaMessage:
        m = LettaMessage(role=ROLES[role], content=[TextContent(text=f"m{i}")])
        self.index[id(m)] = i
        return m

    def count(self, messages: list[LettaMessage]) -> int:
        """The simulation's count of the messages (a summary counts as its note)."""
        out = 0
        for m in messages:
            i = self.index.get(id(m))
            if i is not None:
                out += self.cost[i]
            elif m.role != MessageRole.system:
                out += self.note
        return out

    def output(self, end: int) -> int:
        sk = self.sk
        return sk.tokens[end] if end < sk.size and sk.roles[end] == "assistant" else 0

    def compare(self, sim: Any, record: Any, what: Any) -> None:
        letters = sim.dispositions(record.step)
        kept = [i for i, d in enumerate(letters) if d == "k"]
        listed = [self.index.get(id(m)) for m in self.context]
        raw = [i for i in listed if i is not None]
        summaries = sum(i is None for i in listed[1:])
        assert listed[1 + summaries :] == raw[self.head :], what  # summary right after system
        assert raw == kept, (what, record.step)
        assert summaries * self.note == record.plan.gap_note, (what, record.step)


def _install_stand_ins(monkeypatch: pytest.MonkeyPatch, h: Harness) -> None:
    async def simple_summary(**_: Any) -> str:
        return "S"

    async def convert(**_: Any) -> list[LettaMessage]:
        return [LettaMessage(role=MessageRole.user, content=[TextContent(text="summary")])]

    async def count_tokens(actor: Any, llm_config: Any, messages: list[LettaMessage]) -> int:
        return h.count(messages)

    async def count_tokens_with_tools(*, messages: list[LettaMessage], **_: Any) -> int:
        return h.count(messages)

    async def summarizer_config(*, agent_llm_config: LLMConfig, **_: Any) -> LLMConfig:
        return agent_llm_config

    monkeypatch.setattr(letta_summarizer, "simple_summary", simple_summary)
    monkeypatch.setattr(letta_summarizer, "convert_message_creates_to_messages", convert)
    monkeypatch.setattr(letta_sliding, "simple_summary", simple_summary)
    monkeypatch.setattr(letta_all, "simple_summary", simple_summary)
    monkeypatch.setattr(letta_sliding, "count_tokens", count_tokens)
    monkeypatch.setattr(letta_compact, "count_tokens", count_tokens)
    monkeypatch.setattr(letta_compact, "count_tokens_with_tools", count_tokens_with_tools)
    monkeypatch.setattr(letta_compact, "build_summarizer_llm_config", summarizer_config)


class _Agents:
    async def get_agent_by_id_async(self, **_: Any) -> Any:
        return SimpleNamespace(
            llm_config=None,
            tags=[],
            timezone="UTC",
            id="agent-1",
            project_id=None,
            template_id=None,
        )


class _Store:
    async def create_many_messages_async(self, **_: Any) -> None:
        return None


def _window(rng: random.Random, sk: Any) -> int:
    return max(2_000, int(sum(sk.tokens) * rng.uniform(0.1, 0.8)))


async def check_summarizer(seed: int, mode: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """letta_agent.py (the older loop): after each invocation, _rebuild_context_window
    calls Summarizer.summarize with force=clear=(the invocation's total tokens > window)."""
    run = random_run(seed)
    rng = random.Random(-seed)
    summary_tokens = rng.choice((0, 50, 1_000, 3_000))
    h = Harness(run, summary_tokens)
    window = _window(rng, h.sk)
    params = LettaSummarizerParams(
        mode=mode,
        message_buffer_limit=rng.randint(4, 60),
        message_buffer_min=rng.randint(1, 15),
        partial_evict_summarizer_percentage=rng.choice((0.3, 0.3, rng.uniform(0.05, 0.9))),
        window=window,
        summary_tokens=summary_tokens,
    )
    sim = simulate(
        h.sk, POLICIES["letta_summarizer"], params, budget=10**9, hard_limit=10**9, count=EST.count
    )
    _install_stand_ins(monkeypatch, h)
    summarizer = letta_summarizer.Summarizer(
        mode=SummarizationMode.PARTIAL_EVICT_MESSAGE_BUFFER
        if mode == "partial_evict"
        else SummarizationMode.STATIC_MESSAGE_BUFFER,
        message_buffer_limit=params.message_buffer_limit,
        message_buffer_min=params.message_buffer_min,
        partial_evict_summarizer_percentage=params.partial_evict_summarizer_percentage,
        agent_manager=_Agents(),
        message_manager=_Store(),
        actor=None,
        agent_id="agent-1",
    )
    spent, users, evictions = 0, 0, 0
    for record in sim.records:
        while h.added < record.end:
            m = h.letta[h.added]
            if m.role == MessageRole.user:
                users += 1
                if users > 1:  # the invocation before this message is over
                    over = spent > window
                    before = list(h.context)
                    try:
                        h.context, _ = await summarizer.summarize(
                            in_context_messages=h.context,
                            new_letta_messages=[],
                            force=over,
                            clear=over,
                        )
                    except ValueError:
                        h.context = before  # no assistant message to keep from
                    evictions += h.context != before
                    spent = 0
            h.context = [*h.context, m]
            h.added += 1
        h.compare(sim, record, (seed, mode, params))
        spent += h.count(h.context) + h.output(record.end)  # the step's usage.total_tokens
    return evictions


async def check_sliding(seed: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """letta_agent_v3.py: after a step whose total tokens exceed the trigger threshold,
    compact_messages (sliding window, falling back to "all") before the next step."""
    run = random_run(seed)
    rng = random.Random(-seed)
    h = Harness(run, 0)
    window = _window(rng, h.sk)
    summary_tokens = rng.choice((0, 50, 1_000, window // 4))  # large: the fallback's check
    h.note = MESSAGE_OVERHEAD + summary_tokens
    percentage = rng.choice((0.3, 0.3, round(rng.uniform(0.05, 0.9), 2)))
    params = LettaSlidingParams(percentage, window=window, summary_tokens=summary_tokens)
    sim = simulate(
        h.sk,
        POLICIES["letta_sliding_window"],
        params,
        budget=10**9,
        hard_limit=10**9,
        count=EST.count,
    )
    _install_stand_ins(monkeypatch, h)
    config = LLMConfig(model="gpt-4o", model_endpoint_type="openai", context_window=window)
    threshold = get_compaction_trigger_threshold(config)
    settings = CompactionSettings(mode="sliding_window", sliding_window_percentage=percentage)
    compact_after, compactions = -1, 0
    for record in sim.records:
        if compact_after >= 0:
            # The step's own messages (its response and tool results), not the next user's.
            e = record.end
            while e > compact_after + 1 and h.sk.roles[e - 1] == "user":
                e -= 1
            h.context += h.letta[h.added : e]
            h.added = max(h.added, e)
            result = await letta_compact.compact_messages(
                actor=None,
                agent_id="agent-1",
                agent_llm_config=config,
                telemetry_manager=None,
                llm_client=None,
                agent_type=AgentType.letta_v1_agent,
                messages=h.context,
                timezone="UTC",
                compaction_settings=settings,
                trigger_threshold=threshold,
            )
            h.context = result.compacted_messages
            compact_after = -1
            compactions += 1
        h.context += h.letta[h.added : record.end]
        h.added = max(h.added, record.end)
        h.compare(sim, record, (seed, params))
        if h.count(h.context) + h.output(record.end) > threshold:
            compact_after = record.end
    return compactions


@pytest.mark.parametrize("mode", ["partial_evict", "static_buffer"])
@pytest.mark.parametrize("chunk", range(2))
def test_letta_summarizer_evicts_what_letta_evicts(mode, chunk, monkeypatch):
    acted = 0
    for seed in range(chunk * 30, (chunk + 1) * 30):
        acted += off_the_main_thread(asyncio.run, check_summarizer(seed, mode, monkeypatch)) > 0
    assert acted > 5  # the histories do make Letta evict


@pytest.mark.parametrize("chunk", range(2))
def test_letta_sliding_window_keeps_what_letta_keeps(chunk, monkeypatch):
    acted = 0
    for seed in range(chunk * 30, (chunk + 1) * 30):
        acted += off_the_main_thread(asyncio.run, check_sliding(seed, monkeypatch)) > 0
    assert acted > 5  # the histories do make Letta compact
