"""Reads for the HTTP API: a page of the runs a caller may see, newest first, and a
run's requests with their measured usage beside the estimated size of what each one
sent (system prompt, tool definitions, the rest), read from the counts stored at
import: a run of any length answers in one query, without tokenizing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from django.contrib.auth.models import User
from django.db.models import Q
from django.db.models.fields.json import KeyTransform

from contextsim.counting.estimators import STAND_INS, Estimator
from contextsim.engine.replay import replay_log
from contextsim.model import KINDS, Usage, request_bounds
from webapp.models import Message, Run
from webapp.runs.reads import visible_runs
from webapp.store.reads import skeleton_of

LISTED_FIELDS = (
    "public_id",
    "title",
    "format",
    "model",
    "message_count",
    "request_count",
    "revision",
    "last_append",
    "created",
)
"""The columns a listed run's answer reads (a run's compactions and elisions are not)."""


@dataclass(frozen=True, slots=True)
class RunsPage:
    runs: list[Run]
    more: bool
    """Whether older runs follow the last one (ask again with it as `before`)."""


def runs_page(user: User, limit: int, format: str = "", before: str = "") -> RunsPage:
    """At most `limit` runs `user` may see (their own and the public ones, as on the
    runs page), newest first, of `format` if given, older than the run `before` (a
    public id) if given. Keyset pagination: a page costs the same however deep it is,
    and runs added meanwhile do not shift the pages after. Raises ValueError naming
    `before` when it is no run the user may see."""
    runs = visible_runs(user)
    if format:
        runs = runs.filter(format=format)
    if before:
        mark = visible_runs(user).filter(public_id=before).values_list("created", "pk").first()
        if mark is None:
            raise ValueError(f"before: no run {before!r} that you can see")
        runs = runs.filter(Q(created__lt=mark[0]) | Q(created=mark[0], pk__lt=mark[1]))
    found = list(runs.order_by("-created", "-pk").only(*LISTED_FIELDS)[: limit + 1])
    return RunsPage(found[:limit], len(found) > limit)


@dataclass(frozen=True, slots=True)
class RequestFigures:
    """One request of a run. Tokens by the estimator the answer names."""

    step: int
    history: int
    """Messages sent: every message before the step's response, but those a logged
    compaction replaced (its summary counts as one)."""
    usage: Usage | None
    """As the provider measured it; None when the log has no usage for the request."""
    system: int
    """Tokens of the system messages sent (kind "system")."""
    tools: int
    """Tokens of the tool definitions sent (kind "tools")."""
    messages: int
    """Tokens of every other message sent (overheads included, as every count is)."""


def own_run(owner: User, public_id: str) -> Run | None:
    """`owner`'s run `public_id` (only its id read, as an append needs), or None."""
    return Run.objects.only("id").filter(public_id=public_id, owner=owner).first()


def counted_by(run: Run, estimator: str) -> str:
    """The estimator whose counts stand for `estimator` on `run`: its calibrated model
    while the run's import is still making a slow tokenizer's counts, as the dashboard
    shows (webapp.dashboard.analysis), else itself."""
    return STAND_INS.get(estimator, estimator) if estimator in run.counting else estimator


def request_figures(run: Run, estimator: str, counter: Estimator) -> list[RequestFigures]:
    """Every request of `run` (contextsim.model.request_bounds), its sizes by
    `estimator` (counted by `counter`): from the counts stored with the messages, in one
    query of its messages; from the run's skeleton when they are not all stored (a
    person's own fitted estimator), which counts the run once, not per request."""
    rows = list(
        Message.objects.filter(run=run)
        .order_by("index")
        .values_list(
            "role",
            "kind",
            KeyTransform(estimator, "counts"),
            "usage_input",
            "usage_cache_read",
            "usage_cache_write",
            "usage_output",
        )
    )
    if run.compactions or run.elisions:
        return _as_logged(run, estimator, counter)
    if any(not isinstance(row[2], int) for row in rows):
        return _from_skeleton(run, estimator, counter)
    bounds = request_bounds([row[0] for row in rows])
    usage = [_usage(rows[response][3:]) if response is not None else None for _, response in bounds]
    ends = [end for end, _ in bounds]
    return _figures([row[1] for row in rows], [row[2] for row in rows], ends, usage)


def _usage(row: Sequence[int | None]) -> Usage | None:
    """The stored usage columns (input, cache read, cache write, output) as a Usage,
    what the core makes of them (derived.stored_message): unstated cache figures 0."""
    given, read, write, output = row
    return None if given is None else Usage(given, read or 0, write or 0, output or 0)


def _from_skeleton(run: Run, estimator: str, counter: Estimator) -> list[RequestFigures]:
    sk = skeleton_of(run, estimator, counter)
    return _figures([KINDS[k] for k in sk.kinds], list(sk.tokens), list(sk.ends), list(sk.usage))


def _as_logged(run: Run, estimator: str, counter: Estimator) -> list[RequestFigures]:
    """The figures of a run whose log compacted or shortened what it sent: each request
    as the log replays it (as_logged, the dashboard's baseline): the messages after a
    compaction's boundary, the summary, the shortened texts."""
    sk = skeleton_of(run, estimator, counter)
    log = replay_log(sk)
    kinds = [KINDS[k] for k in sk.kinds]
    system_sums = _sums(kinds, list(sk.tokens), "system")
    tools_sums = _sums(kinds, list(sk.tokens), "tools")
    out = []
    for step, (plan, sent) in enumerate(zip(log.plans, log.estimated, strict=True)):
        gap = max(plan.gap_end - plan.gap_start, 0)
        ranges = ((0, plan.gap_start), (plan.gap_end, plan.end)) if gap else ((0, plan.end),)
        system = sum(system_sums[b] - system_sums[a] for a, b in ranges)
        tools = sum(tools_sums[b] - tools_sums[a] for a, b in ranges)
        history = plan.end - gap + (1 if gap else 0)
        out.append(
            RequestFigures(step, history, sk.usage[step], system, tools, sent - system - tools)
        )
    return out


def _figures(
    kinds: Sequence[str],
    tokens: Sequence[int],
    ends: Sequence[int],
    usage: Sequence[Usage | None],
) -> list[RequestFigures]:
    """Per request (the history of request k is messages [0, ends[k])), the tokens of
    each part sent, from prefix sums over the messages: linear in messages + requests."""
    system_sums = _sums(kinds, tokens, "system")
    tools_sums = _sums(kinds, tokens, "tools")
    every = list(accumulate(tokens, initial=0))
    out = []
    for step, (end, measured) in enumerate(zip(ends, usage, strict=True)):
        system, tools = system_sums[end], tools_sums[end]
        out.append(RequestFigures(step, end, measured, system, tools, every[end] - system - tools))
    return out


def _sums(kinds: Sequence[str], tokens: Sequence[int], kind: str) -> list[int]:
    """Prefix sums of the tokens of the messages of `kind`: [0, t0, t0+t1, ...]."""
    return list(
        accumulate((t if k == kind else 0 for k, t in zip(kinds, tokens, strict=True)), initial=0)
    )
