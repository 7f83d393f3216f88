"""Differential test: `adk_events_compaction` against google-adk's own compaction code
(google.adk.apps.compaction and the prompt assembly of flows/llm_flows/context/
_compaction.py) on seeded random histories, with a summarizer that writes no model call.

google-adk cannot be installed beside this project's pinned packages, so this runs only
where it is installed (e.g. a separate venv that also sees this project); elsewhere it is
skipped. Per request: ADK's post-invocation pass after each finished invocation, its
pre-request token check, the prompt's raw events and summaries, and then the request's
usage (the simulation's size) recorded on the model's response, as a model would.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

adk = pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps import compaction as adk_compaction  # noqa: E402
from google.adk.apps.app import App, EventsCompactionConfig  # noqa: E402
from google.adk.apps.base_events_summarizer import BaseEventsSummarizer  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions, EventCompaction  # noqa: E402
from google.adk.flows.llm_flows.context._compaction import (  # noqa: E402
    _process_compaction_events,
)
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402

from contextsim.counting.builder import build  # noqa: E402
from contextsim.counting.estimators import ESTIMATORS  # noqa: E402
from contextsim.engine.simulate import simulate  # noqa: E402
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart  # noqa: E402
from contextsim.registry import POLICIES  # noqa: E402
from contextsim.systems.adk.policies import AdkParams  # noqa: E402
from tests.conftest import off_the_main_thread  # noqa: E402

EST = ESTIMATORS["chars4"]
AGENT = "assistant"


def random_run(seed: int) -> Run:
    rng = random.Random(seed)
    messages = [Message("user", (TextPart("task " * rng.randint(1, 300)),))]
    call = 0
    for _ in range(rng.randint(3, 40)):
        if rng.random() < 0.3:
            messages.append(Message("assistant", (TextPart("done " * rng.randint(1, 50)),)))
            messages.append(Message("user", (TextPart("next " * rng.randint(1, 300)),)))
        ids = [f"c{call + j}" for j in range(rng.choice((1, 1, 2)))]
        call += len(ids)
        messages.append(Message("assistant", tuple(ToolCallPart(i, "read", "{}") for i in ids)))
        results = tuple(ToolResultPart(i, "r" * rng.randint(10, 20_000)) for i in ids)
        messages.append(Message("tool", results))
    return Run(f"adk {seed}", tuple(messages))


def to_events(run: Run) -> list[Event]:
    events, invocation = [], -1
    for i, m in enumerate(run.messages):
        if m.role == "user" and m.text:
            invocation += 1
        parts: list[types.Part] = []
        if m.text:
            parts.append(types.Part(text=m.text))
        parts += [
            types.Part(function_call=types.FunctionCall(id=c.id, name=c.name, args={}))
            for c in m.tool_calls
        ]
        parts += [
            types.Part(
                function_response=types.FunctionResponse(
                    id=r.call_id, name="read", response={"result": r.text}
                )
            )
            for r in m.tool_results
        ]
        author = AGENT if m.role == "assistant" else "user"
        role = "model" if m.role == "assistant" else "user"
        events.append(
            Event(
                id=f"m{i}",
                invocation_id=f"inv{invocation}",
                author=author,
                content=types.Content(role=role, parts=parts),
                timestamp=float(i + 1),
            )
        )
    return events


class Summarizer(BaseEventsSummarizer):
    """A summary of one character: no model is called."""

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        stamps = [e.timestamp for e in events]
        return Event(
            author="model",
            invocation_id=Event.new_id(),
            actions=EventActions(
                compaction=EventCompaction(
                    start_timestamp=min(stamps),
                    end_timestamp=max(stamps),
                    compacted_content=types.Content(role="model", parts=[types.Part(text="S")]),
                )
            ),
        )


def _params(rng: random.Random, total: int) -> AdkParams:
    window = rng.random() < 0.6
    token = not window or rng.random() < 0.4
    return AdkParams(
        rng.randint(1, 4) if window else None,
        rng.randint(0, 3) if window else None,
        max(1, int(total * rng.uniform(0.05, 0.6))) if token else None,
        rng.randint(0, 6) if token else None,
        summary_tokens=0,
    )


async def check(seed: int, monkeypatch: pytest.MonkeyPatch) -> int:
    run = random_run(seed)
    rng = random.Random(-seed)
    sk = build(run, EST)
    params = _params(rng, sum(sk.tokens))
    sim = simulate(
        sk,
        POLICIES["adk_events_compaction"],
        params,
        budget=10**9,
        hard_limit=10**9,
        count=EST.count,
    )
    note = sim.records[0].plan.gap_note  # 0 summaries at first
    per_summary = 4  # MESSAGE_OVERHEAD + summary_tokens (0)
    assert note == 0

    def estimate(*, events: list[Event], **_: Any) -> int:
        # ADK's chars/4 estimate, replaced by the simulation's estimator's count of the
        # same prompt (both are "the harness's own count").
        shown = _process_compaction_events(events)
        raw = sum(sk.tokens[int(e.id[1:])] for e in shown if e.id.startswith("m"))
        return raw + per_summary * (len(shown) - sum(e.id.startswith("m") for e in shown))

    monkeypatch.setattr(adk_compaction, "_estimate_prompt_token_count", estimate)
    config = EventsCompactionConfig(
        summarizer=Summarizer(),
        compaction_interval=params.compaction_interval,
        overlap_size=params.overlap_size,
        token_threshold=params.token_threshold,
        event_retention_size=params.event_retention_size,
    )
    agent = LlmAgent(name=AGENT, model="gemini-2.5-flash")
    app = App(name="app", root_agent=agent, events_compaction_config=config)
    service = InMemorySessionService()
    session = await service.create_session(app_name="app", user_id="u")
    events = to_events(run)
    added = 0
    compactions = 0
    for record in sim.records:
        for event in events[added : record.end]:
            if event.author == "user" and event.content.parts[0].text and added:
                # A new invocation: the one before it finished (runner's post pass).
                async for made in adk_compaction._run_compaction_for_sliding_window(
                    app, session, service
                ):
                    await service.append_event(session=session, event=made)
            await service.append_event(session=session, event=event)
            added += 1
        if params.token_threshold is not None:
            await adk_compaction._run_compaction_for_token_threshold_config(
                config=config,
                session=session,
                session_service=service,
                agent=agent,
                agent_name=AGENT,
            )
        shown = _process_compaction_events(session.events)
        raw = sorted(int(e.id[1:]) for e in shown if e.id.startswith("m"))
        summaries = len(shown) - len(raw)
        letters = sim.dispositions(record.step)
        kept = [i for i, d in enumerate(letters) if d == "k"]
        assert raw == kept, (seed, record.step, params)
        assert summaries * per_summary == record.plan.gap_note, (seed, record.step)
        compactions += bool(summaries)
        # The model answers: its response carries the request's measured prompt size.
        if record.end < len(events):
            response = events[record.end]
            response.usage_metadata = types.GenerateContentResponseUsageMetadata(
                prompt_token_count=record.sent
            )
    return compactions


@pytest.mark.parametrize("chunk", range(4))
def test_adk_compacts_the_events_google_adk_compacts(chunk, monkeypatch):
    acted = 0
    for seed in range(chunk * 25, (chunk + 1) * 25):
        acted += off_the_main_thread(asyncio.run, check(seed, monkeypatch)) > 0
    assert acted > 5  # the histories do make ADK compact
