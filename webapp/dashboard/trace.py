"""Rows of the trace table and items of the step inspector: simulation figures joined
with the stored messages they describe (only the messages shown are read)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contextsim.analysis.problems import Problem
from contextsim.analysis.report import problem_dict
from contextsim.engine.simulate import REPLAY, SentItem, Simulation, explain
from contextsim.registry import POLICIES
from webapp.models import Message, Run
from webapp.runs.sessions import spawned

PAGE = 50
PREVIEW_CHARS = 600


@dataclass(frozen=True, slots=True)
class TraceRow:
    step: int
    tools: str
    arguments: str
    result_tokens: int
    sent: int
    other_sent: int | None
    stage: str
    letters: dict[str, int]
    problems: list[str]
    measured: int | None
    rejected: bool
    over_budget: bool
    subagents: tuple[Run, ...] = ()
    """The subagents this step's calls started (selectors.sessions)."""
    time: datetime | None = None
    """When the response began to arrive, as logged."""
    took: float | None = None
    """Seconds from the request's last message to its response, as logged."""
    cached: int = 0
    """Tokens of the request's cached prefix (StepRecord.cached)."""
    cost: float = 0.0
    """US dollars: measured when the log has the request's usage (as_logged), else
    estimated (contextsim.engine.simulate.StepRecord.cost)."""


SORTS = {
    "step": "step",
    "sent": "tokens sent",
    "measured": "measured tokens",
    "cost": "cost",
    "results": "new result tokens",
    "cached": "cached prefix",
}
"""The trace table's orders: query value -> what it sorts by."""


def sorted_steps(sim: Simulation, key: str, descending: bool) -> list[int]:
    """Every step in the order of `key` (one of SORTS; ties in step order), for the
    trace table's pages. Raises KeyError for an unknown key."""
    records = sim.records
    if key == "step":
        steps = list(range(len(records)))
        return steps[::-1] if descending else steps
    sk = sim.skeleton
    value: dict[str, Any] = {
        "sent": lambda k: records[k].sent,
        "measured": lambda k: -1 if records[k].measured is None else records[k].measured,
        "cost": lambda k: records[k].cost,
        "cached": lambda k: records[k].cached,
        "results": lambda k: sum(
            sk.tokens[i]
            for i in range(sk.ends[k - 1] if k else 0, records[k].end)
            if sk.result_count[i]
        ),
    }
    of = value[key]
    return sorted(range(len(records)), key=lambda k: (-of(k), k) if descending else (of(k), k))


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def trace_rows(
    run: Run,
    sim: Simulation,
    problems: list[Problem],
    page: int,
    other: Simulation | None,
    prompts: dict[str, Run] | None = None,
    order: list[int] | None = None,
) -> list[TraceRow]:
    """One row per step of page `page` (0-based, PAGE rows each) of the steps in
    `order` (sorted_steps; step order when None); `prompts` are the run's subagents by
    their task, to link the calls that started them."""
    sk = sim.skeleton
    every = order if order is not None else range(len(sim.records))
    steps = every[page * PAGE : (page + 1) * PAGE]
    responses = [answer for k in steps if (answer := sk.responses[k]) is not None]
    parts = dict(Message.objects.filter(run=run, index__in=responses).values_list("index", "parts"))
    times = message_times(run, [*responses, *(r - 1 for r in responses if r)])
    by_step: dict[int, list[str]] = {}
    for p in problems:
        by_step.setdefault(p.step, []).append(p.kind)
    rows = []
    for k in steps:
        r = sim.records[k]
        answer = sk.responses[k]
        shown = parts.get(answer, []) if answer is not None else []
        calls = [p for p in shown if p.get("type") == "tool_call"]
        start = sk.ends[k - 1] if k else 0
        cleared, truncated, summarized, offloaded = sim.counts(k)
        rows.append(
            TraceRow(
                step=k,
                tools=", ".join(c["name"] for c in calls),
                arguments=_short("; ".join(c["arguments"] for c in calls)),
                result_tokens=sum(sk.tokens[i] for i in range(start, r.end) if sk.result_count[i]),
                sent=r.sent,
                other_sent=other.records[k].sent if other else None,
                stage=r.stage,
                letters={
                    "cleared": cleared,
                    "truncated": truncated,
                    "summarized": summarized,
                    "offloaded": offloaded,
                },
                problems=sorted(set(by_step.get(k, []))),
                measured=r.measured,
                rejected=r.rejected,
                over_budget=r.over_budget,
                subagents=tuple(spawned(calls, prompts)) if prompts else (),
                cached=r.cached,
                cost=r.cost,
                **request_time(times, sk.responses[k]),
            )
        )
    return rows


def message_times(run: Run, indexes: list[int]) -> dict[int, datetime]:
    """The logged time of each of these messages that has one."""
    rows = Message.objects.filter(run=run, index__in=indexes, timestamp__isnull=False)
    return {index: when for index, when in rows.values_list("index", "timestamp") if when}


def request_time(times: dict[int, datetime], response: int | None) -> dict[str, Any]:
    """When request's response (a message index) began, and how long after the
    request's last message; {} when the log does not say."""
    if response is None or response not in times:
        return {}
    began = times[response]
    before = times.get(response - 1)
    took = (began - before).total_seconds() if before is not None else None
    return {"time": began, "took": took if took is not None and took >= 0 else None}


@dataclass(frozen=True, slots=True)
class InspectItem:
    index: int | None
    role: str
    kind: str
    disposition: str
    tokens: int
    original: int
    text: str
    truncated_text: bool
    change: str


def part_text(part: dict[str, Any]) -> str:
    kind = part.get("type")
    if kind in ("text", "thinking"):
        return str(part.get("text", ""))
    if kind == "tool_call":
        return f"{part.get('name')}({part.get('arguments')})"
    if kind == "tool_result":
        return str(part.get("text", ""))
    if kind == "tool_spec":
        return f"tool {part.get('name')}: {part.get('definition')}"
    return f"[{kind} {part.get('media_type', '')}]"


def message_text(parts: list[dict[str, Any]]) -> str:
    return "\n\n".join(part_text(p) for p in parts)


INSERTED_TEXT = {
    "s": "[summary of the earlier conversation]",
    "t": "[note: earlier parts of the conversation were left out]",
}
"""What an inserted summary or note shows when the policy names no text of its own."""
NOTE_TEXT = {
    "c": "[cleared: the tool result was replaced by a short note]",
    "o": "[offloaded: replaced by a preview and a file path]",
}


def inspect_items(
    run: Run, sim: Simulation, step: int, start: int, count: int, *, with_text: bool = True
) -> list[InspectItem]:
    """Items [start, start + count) of the request at `step`, with what changed since the
    previous request; without `with_text`, their texts are "" and no message is read."""
    texts = POLICIES[sim.policy].replacements(sim.params)
    elided = {e["message"]: e["text"] for e in run.elisions} if sim.policy == REPLAY else {}
    # A gap the policy puts nothing in (as_logged: the log's own summary is a message of
    # the run) is no item of the request.
    items = [i for i in explain(sim, step) if i.index is not None or i.tokens or texts]
    previous = {i.index: _state(i) for i in explain(sim, step - 1)} if step else {}
    shown = items[start : start + count]
    wanted = [i.index for i in shown if i.index is not None] if with_text else []
    parts = dict(Message.objects.filter(run=run, index__in=wanted).values_list("index", "parts"))
    out = []
    for item in shown:
        if item.index is None:
            key = "s" if item.kind == "summary" else "t"
            text = texts.get(key, INSERTED_TEXT[key])
            out.append(
                InspectItem(None, item.role, item.kind, "k", item.tokens, 0, text, False, "")
            )
            continue
        stored = parts.get(item.index, [])
        full = message_text(stored)
        if item.thinking_cleared and not item.body_cleared:
            full = _without_thinking(stored)
        elif item.disposition in "co" and item.disposition in texts:
            replaced = texts[item.disposition]
            full = f"{replaced}\n\n--- what it replaced ---\n{full}"
        elif item.disposition == "c" and item.index in elided:
            # as_logged: the agent itself sent this message shortened (model.Elision).
            full = f"{elided[item.index]}\n\n--- the message in full ---\n{full}"
        before = previous.get(item.index)
        change = "new" if before is None else _change(before, _state(item))
        out.append(
            InspectItem(
                item.index,
                item.role,
                item.kind,
                item.disposition,
                item.tokens,
                item.original,
                full[:PREVIEW_CHARS],
                len(full) > PREVIEW_CHARS,
                change,
            )
        )
    return out


THINKING_NOTE = "[thinking cleared: the message was sent without its thinking]"


def _without_thinking(parts: list[dict[str, Any]]) -> str:
    """A message sent without its thinking: what was sent, then what was left out."""
    sent = message_text([p for p in parts if p.get("type") != "thinking"])
    thought = message_text([p for p in parts if p.get("type") == "thinking"])
    return f"{THINKING_NOTE}\n\n{sent}\n\n--- the thinking left out ---\n{thought}"


def _state(item: SentItem) -> tuple[str, bool, bool]:
    return item.disposition, item.body_cleared, item.thinking_cleared


def _change(before: tuple[str, bool, bool], after: tuple[str, bool, bool]) -> str:
    """What changed of a message since the previous request ("" nothing): its
    disposition's letters and, when it is cleared, which of its edits are new (a
    message whose body was cleared may have its thinking cleared later: c→c)."""
    if before == after:
        return ""
    label = f"{before[0]}→{after[0]}"
    edits = zip(("body", "thinking"), before[1:], after[1:], strict=True)
    added = [name for name, b, a in edits if a and not b]
    return f"{label}, {' and '.join(added)} cleared" if after[0] == "c" and added else label


def records_csv_rows(sim: Simulation) -> list[list[Any]]:
    """One row per request; every token column says which size it is (docs/truth.md):
    `reconciled` (the provider's count, when the run is reconciled), `estimated` (the
    estimator's count), `measured` (the log's usage); `cost_from` says whether a row's
    dollars are its measured usage priced or the simulated request's."""
    size = "reconciled" if sim.reconciliation is not None else "estimated"
    replayed = sim.policy == REPLAY
    head = [
        "step",
        "history_messages",
        f"sent_tokens_{size}",
        "sent_tokens_estimated",
        "full_history_tokens_estimated",
        "stage",
        "over_budget",
        "rejected",
        f"cached_tokens_{size}",
        "cost_usd",
        "cost_from",
        "measured_tokens",
        "cleared",
        "truncated",
        "summarized",
        "offloaded",
    ]
    rows: list[list[Any]] = [head]
    for r in sim.records:
        priced = "measured" if replayed and r.measured is not None else "simulated"
        rows.append(
            [
                r.step,
                r.end,
                r.sent,
                r.estimated,
                r.full,
                r.stage,
                r.over_budget,
                r.rejected,
                r.cached,
                round(r.cost, 6),
                priced,
                r.measured,
                *sim.counts(r.step),
            ]
        )
    return rows


def records_json(sim: Simulation, problems: list[Problem], defer: str = "") -> str:
    """The simulation's requests and problems as JSON; `defer`: the tools whose
    definitions it deferred (contextsim.engine.deferral), "" for none."""
    head, *body = records_csv_rows(sim)
    return json.dumps(
        {
            "policy": sim.policy,
            "defer": defer,
            "budget": sim.budget,
            "hard_limit": sim.hard_limit,
            "estimator": sim.skeleton.estimator,
            "steps": [dict(zip(head, row, strict=True)) for row in body],
            "problems": [problem_dict(p) for p in problems],
        }
    )


def step_timing(run: Run, sim: Simulation, step: int) -> dict[str, Any]:
    """When the step's request was made (its last message's logged time) and when its
    response began, and the seconds between; {} when the log has no times."""
    sk = sim.skeleton
    response = sk.responses[step]
    last = sim.records[step].end - 1
    times = message_times(run, [i for i in (last, response) if i is not None and i >= 0])
    out: dict[str, Any] = {"sent": times.get(last)}
    out.update(request_time(times, response))
    return out if any(v is not None for v in out.values()) else {}
