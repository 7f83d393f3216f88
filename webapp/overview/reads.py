"""Where a person's tokens and money went across all their runs: every measured response
(a Message with usage), priced as the dashboard prices it (each response at the model
that answered it, webapp.dashboard.analysis.run_prices), grouped by day, week, month,
model, project, agent, machine or session, over a date range and filters (the sums per
run, day and model come from webapp.overview.usage); the compactions and rejected
requests the logs record; where the context went (the runs' stored shares).

A response's day is when the log says it came (its message's time), else the day its
run was stored. A session is a run with its subagents (its collection). Reads only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import F

from contextsim.analysis.context_shares import ContextShares
from webapp.models import Message, Run, RunShares
from webapp.overview.usage import RunKind, tallies

By = Literal["day", "week", "month", "model", "project", "agent", "machine", "session"]
BY: tuple[By, ...] = (
    "day",
    "week",
    "month",
    "model",
    "project",
    "agent",
    "machine",
    "session",
)
SORTS = (
    "key",
    "cost",
    "input",
    "cache_read",
    "cache_write",
    "output",
    "responses",
    "runs",
    "compactions",
    "rejected",
)
CHUNK = 5_000
"""Responses read at a time."""


@dataclass(frozen=True, slots=True)
class Filters:
    """What the overview counts: responses from `since` to `until` (days, both
    included; None: no bound) of runs of this `project`, `agent` (the log's format) and
    `model` ("": any)."""

    since: dt.date | None = None
    until: dt.date | None = None
    project: str = ""
    agent: str = ""
    model: str = ""
    tool: str = ""
    """Only runs whose requests sent this tool's results, calls or definition."""
    server: str = ""
    """Only runs whose requests sent a tool of this MCP server (or "built-in")."""
    machine: str = ""
    """Only runs sent by this machine's watcher (`watch --to`)."""


@dataclass(frozen=True, slots=True)
class Share:
    """One part of the context the runs sent (tokens summed over their requests), and
    how many runs sent it."""

    name: str
    tokens: int
    runs: int


@dataclass(frozen=True, slots=True)
class Context:
    """Where the context of the runs behind the overview went (the sums of each run's
    stored shares: webapp.store.actions.shares): `sent` over all their requests, its
    `parts` (analysis.context_shares), `tools` and `servers`, the largest first.
    `counted` runs have their shares stored; `waiting` have not yet (a job computes
    them once a run is counted and idle)."""

    sent: int = 0
    parts: tuple[Share, ...] = ()
    tools: tuple[Share, ...] = ()
    servers: tuple[Share, ...] = ()
    counted: int = 0
    waiting: int = 0


@dataclass(slots=True)
class Group:
    """One row: its key and label, the tokens measured (input without the cached,
    cache reads, cache writes, output), the dollars, and the runs behind it. `unpriced`
    counts the responses no price is known for (not in `cost`)."""

    key: str
    label: str
    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    cost: float = 0.0
    responses: int = 0
    unpriced: int = 0
    compactions: int = 0
    """Compactions the logs record in it (at the time of the first message after one)."""
    rejected: int = 0
    """Requests the provider refused, as the logs record them (on the day of the error)."""
    overflowed: int = 0
    """Those of them refused for their size (the context window)."""
    runs: set[int] = field(default_factory=set)
    link: str = ""
    """The public id of the run (or collection) a session row opens; "" otherwise."""

    @property
    def total(self) -> int:
        return self.input + self.cache_read + self.cache_write + self.output


@dataclass(frozen=True, slots=True)
class _RunFacts:
    model: str
    project: str
    agent: str
    created: dt.date
    session: str
    label: str
    link: str
    compactions: tuple[int, ...] = ()
    machine: str = ""
    rejections: tuple[tuple[dt.date | None, bool], ...] = ()
    """(day of the error or None, refused for its size) per rejection the log records."""


def overview(owner: User | AnonymousUser, filters: Filters, by: By) -> tuple[list[Group], Group]:
    """The owner's measured responses grouped `by` (in key order), and their total."""
    groups: dict[str, Group] = {}
    total = Group("all", "all")
    if not owner.is_authenticated:
        return [], total
    runs = _runs(owner, filters)
    kinds = {pk: RunKind(f.model, f.agent, f.created) for pk, f in runs.items()}
    found = tallies(kinds, filters.since, filters.until, filters.model)
    for run_id, when, model, tally in found:
        facts = runs[run_id]
        for group in (_group(groups, facts, when, model, by), total):
            group.input += tally.input
            group.cache_read += tally.cache_read
            group.cache_write += tally.cache_write
            group.output += tally.output
            group.responses += tally.responses
            group.unpriced += tally.unpriced
            group.cost += tally.cost
            group.runs.add(run_id)
    for run_id, day in _compactions(runs, filters):
        facts = runs[run_id]
        for group in (_group(groups, facts, day, facts.model, by), total):
            group.compactions += 1
    for pk, facts in runs.items():
        if filters.model and facts.model != filters.model:
            continue
        for logged, overflow in facts.rejections:
            refused_on = logged or facts.created
            early = filters.since is not None and refused_on < filters.since
            if early or (filters.until is not None and refused_on > filters.until):
                continue
            for group in (_group(groups, facts, refused_on, facts.model, by), total):
                group.rejected += 1
                group.overflowed += overflow
                group.runs.add(pk)
    return sorted(groups.values(), key=lambda g: g.key), total


def context(run_ids: set[int]) -> Context:
    """Where the context of these runs went (their stored shares of their current
    revision summed; the others are `waiting`)."""
    parts: dict[str, list[int]] = {}
    tools: dict[str, list[int]] = {}
    servers: dict[str, list[int]] = {}
    sent = counted = 0
    for data in _shares(run_ids).values():
        counted += 1
        sent += data.sent
        for into, found in ((parts, data.parts), (tools, data.tools), (servers, data.servers)):
            for name, tokens in found.items():
                into.setdefault(name, [0, 0])
                into[name][0] += tokens
                into[name][1] += 1

    def ranked(found: dict[str, list[int]]) -> tuple[Share, ...]:
        rows = (Share(name, tokens, runs) for name, (tokens, runs) in found.items())
        return tuple(sorted(rows, key=lambda s: (-s.tokens, s.name)))

    return Context(
        sent, ranked(parts), ranked(tools), ranked(servers), counted, len(run_ids) - counted
    )


def _shares(run_ids: set[int] | list[int]) -> dict[int, ContextShares]:
    """The runs' stored shares of their current revision and layout, by run."""
    ids = sorted(run_ids)
    out: dict[int, ContextShares] = {}
    for first in range(0, len(ids), CHUNK):
        rows = RunShares.objects.filter(
            run_id__in=ids[first : first + CHUNK], revision=F("run__revision")
        ).values_list("run_id", "data")
        for run_id, data in rows:
            found = ContextShares.from_dict(data)
            if found is not None:
                out[run_id] = found
    return out


def sorted_groups(groups: list[Group], sort: str, descending: bool) -> list[Group]:
    """`groups` in the order of column `sort` (SORTS)."""
    if sort == "key":
        return sorted(groups, key=lambda g: g.key, reverse=descending)
    if sort == "runs":
        return sorted(groups, key=lambda g: len(g.runs), reverse=descending)
    return sorted(groups, key=lambda g: getattr(g, sort), reverse=descending)


def _runs(owner: User, filters: Filters) -> dict[int, _RunFacts]:
    found = Run.objects.filter(owner=owner)
    if filters.project:
        found = found.filter(project=filters.project)
    if filters.agent:
        found = found.filter(format=filters.agent)
    if filters.machine:
        found = found.filter(machine=filters.machine)
    rows = found.values_list(
        "id",
        "model",
        "project",
        "format",
        "created",
        "title",
        "public_id",
        "collection_id",
        "collection__public_id",
        "collection__title",
        "compactions",
        "machine",
        "rejections",
    )
    out = {}
    for row in rows:
        pk, model, project, agent, created, title, public, group, group_id, label, marks = row[:11]
        host, refused = row[11:]
        session = f"c{group}" if group else f"r{pk}"
        link = f"collections/{group_id}" if group else f"runs/{public}"
        at = tuple(int(m["before_message"]) for m in marks or () if "before_message" in m)
        out[pk] = _RunFacts(
            model,
            project,
            agent,
            created.date(),
            session,
            label or title,
            link,
            at,
            host,
            tuple((_day(r.get("time")), bool(r.get("overflow"))) for r in refused or ()),
        )
    if filters.tool or filters.server:
        shares = _shares(list(out))
        out = {
            pk: facts
            for pk, facts in out.items()
            if pk in shares
            and (not filters.tool or filters.tool in shares[pk].tools)
            and (not filters.server or filters.server in shares[pk].servers)
        }
    return out


def _day(seconds: object) -> dt.date | None:
    """The UTC day of a time in seconds since the epoch (None when there is none)."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return None
    return dt.datetime.fromtimestamp(seconds, dt.UTC).date()


def _compactions(runs: dict[int, _RunFacts], filters: Filters) -> Iterator[tuple[int, dt.date]]:
    """(run, day) of each compaction the runs' logs record, in the date range and of the
    model asked for: its day is its first message's after it (its summary)."""
    compacted = {
        pk: facts
        for pk, facts in runs.items()
        if facts.compactions and not (filters.model and facts.model != filters.model)
    }
    indexes = {i for facts in compacted.values() for i in facts.compactions}
    times: dict[tuple[int, int], dt.datetime | None] = {}
    ids = sorted(compacted)
    for first in range(0, len(ids), CHUNK):  # one query per CHUNK runs, not one per run
        rows = Message.objects.filter(
            run_id__in=ids[first : first + CHUNK], index__in=indexes
        ).values_list("run_id", "index", "timestamp")
        times.update(((run, index), when) for run, index, when in rows)
    for pk, facts in compacted.items():
        for index in facts.compactions:
            when = times.get((pk, index))
            day = when.date() if when is not None else facts.created
            early = filters.since is not None and day < filters.since
            if not early and (filters.until is None or day <= filters.until):
                yield pk, day


def _group(groups: dict[str, Group], facts: _RunFacts, day: dt.date, model: str, by: By) -> Group:
    key, label, link = _key(facts, day, model, by)
    found = groups.get(key)
    if found is None:
        found = groups[key] = Group(key, label, link=link)
    return found


def _key(facts: _RunFacts, day: dt.date, model: str, by: By) -> tuple[str, str, str]:
    """The group of a response: its key (the order of the rows), label and link."""
    if by == "day":
        return day.isoformat(), day.isoformat(), ""
    if by == "week":
        monday = day - dt.timedelta(days=day.weekday())
        return monday.isoformat(), f"week of {monday.isoformat()}", ""
    if by == "month":
        return day.strftime("%Y-%m"), day.strftime("%Y-%m"), ""
    if by == "model":  # the model that answered: a session may use several
        return model or "(unknown)", model or "(unknown)", ""
    if by == "project":
        return facts.project or "(none)", facts.project or "(none)", ""
    if by == "agent":
        return facts.agent, facts.agent, ""
    if by == "machine":  # the watcher that sent it (watch --to); "" for this one
        return facts.machine or "(this server)", facts.machine or "(this server)", ""
    return facts.session, facts.label, facts.link
