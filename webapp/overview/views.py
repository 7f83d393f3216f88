"""`/overview/`: where tokens and money went across all of a person's runs (reads in
webapp.overview.reads), as a chart, a table whose every row opens the runs behind it,
and a CSV of the table."""

from __future__ import annotations

import calendar
import csv
import datetime as dt
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_GET

from contextsim.analysis.context_shares import UNLOGGED
from contextsim.model import KINDS
from webapp.dashboard.charts.composition import (
    DISPOSITION_COLOURS,
    KIND_COLOURS,
    UNLOGGED_COLOUR,
    plain,
)
from webapp.http import SignedInRequest
from webapp.overview import reads
from webapp.overview.reads import BY, SORTS, Filters, Group

TIME = ("day", "week", "month")


class BadFilter(ValueError):
    """A filter that cannot be used; the message names it."""


@login_required
@require_GET
def overview(request: SignedInRequest) -> HttpResponse:
    query = request.GET
    try:
        filters, by = _filters(query), _by(query)
    except BadFilter as exc:
        failed = {"error": str(exc), "form": query, "by_choices": BY}
        return render(request, "overview.html", failed, status=400)
    sort = query.get("sort", "key" if by in TIME else "cost")
    sort = sort if sort in SORTS else "cost"
    descending = query.get("dir", "asc" if sort == "key" else "desc") == "desc"
    groups, total = reads.overview(request.user, filters, by)
    rows = reads.sorted_groups(groups, sort, descending)
    if query.get("format") == "csv":
        return _csv(rows, by)
    base = {k: str(v) for k, v in query.items() if k not in ("sort", "dir", "format") and v}
    context: dict[str, Any] = {
        "form": query,
        "by": by,
        "by_choices": BY,
        "rows": [(g, _opens(g, by, base)) for g in rows],
        "total": total,
        "sort": sort,
        "descending": descending,
        "sorts": {
            key: urlencode({**base, "sort": key, "dir": _next_way(key, sort, descending)})
            for key in SORTS
        },
        "tune": urlencode({k: v for k, v in base.items() if k != "by"}),
        "csv": urlencode(
            {**base, "sort": sort, "dir": "desc" if descending else "asc", "format": "csv"}
        ),
        "figure": _figure(sorted(groups, key=lambda g: g.key) if by in TIME else rows[:30], by),
    }
    where = reads.context(total.runs)
    context.update(
        where=where,
        parts=[(s, PART_LABELS.get(s.name, s.name)) for s in where.parts],
        tools=[(s, _narrowed(base, tool=s.name)) for s in where.tools[:TOP]],
        servers=[(s, _narrowed(base, server=s.name)) for s in where.servers[:TOP]],
        more_tools=max(len(where.tools) - TOP, 0),
        parts_figure=_parts_figure(where),
    )
    return render(request, "overview.html", context)


TOP = 25
"""Tools (and MCP servers) listed, the largest first."""
PART_LABELS: dict[str, str] = {
    **{kind: f"kept: {kind.replace('_', ' ')}" for kind in KINDS},
    "cleared": "cleared (notes)",
    "summary": "summary",
    "offloaded": "offloaded (stubs)",
    "notes": "notes",
    UNLOGGED: "unlogged (fitted overhead)",
}
PART_COLOURS = {**KIND_COLOURS, **DISPOSITION_COLOURS, UNLOGGED: UNLOGGED_COLOUR}


def _narrowed(base: dict[str, str], **also: str) -> str:
    """The sessions behind a figure: this overview narrowed to it, by session."""
    return "?" + urlencode({**base, "by": "session", "sort": "cost", **also})


def _parts_figure(where: reads.Context) -> dict[str, Any]:
    """One horizontal bar per part of what the runs sent, the largest on top, in the
    colours of each run's composition chart."""
    shown = list(reversed(where.parts))
    labels = [PART_LABELS.get(s.name, plain(s.name)) for s in shown]
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "x": [s.tokens for s in shown],
                "y": labels,
                "marker": {"color": [PART_COLOURS.get(s.name, "#555555") for s in shown]},
                "customdata": [
                    [round(100 * s.tokens / where.sent, 1) if where.sent else 0, s.runs]
                    for s in shown
                ],
                "hovertemplate": "%{y}<br>%{x:,} tokens sent (%{customdata[0]}%) "
                "by %{customdata[1]:,} runs<extra></extra>",
            }
        ],
        "layout": {
            "margin": {"l": 10, "r": 10, "t": 10, "b": 40},
            "xaxis": {"title": {"text": "tokens sent, over every request"}, "rangemode": "tozero"},
            "yaxis": {"automargin": True},
            "height": 60 + 28 * max(len(shown), 1),
            "plot_bgcolor": "#FFFFFF",
            "paper_bgcolor": "#FFFFFF",
        },
    }


def _next_way(key: str, sort: str, descending: bool) -> str:
    if key == sort:
        return "asc" if descending else "desc"
    return "asc" if key == "key" else "desc"


def _date(query: QueryDict, key: str) -> dt.date | None:
    raw = query.get(key, "").strip()
    if not raw:
        return None
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise BadFilter(f"{key}: expected a date such as 2026-12-05, got {raw!r}") from None


def _filters(query: QueryDict) -> Filters:
    since, until = _date(query, "since"), _date(query, "until")
    if since and until and since > until:
        raise BadFilter(f"since: {since} is after until ({until})")
    return Filters(
        since,
        until,
        query.get("project", "")[:500],
        query.get("agent", "")[:30],
        query.get("model", "")[:200],
        query.get("tool", "")[:300],
        query.get("server", "")[:300],
        query.get("machine", "")[:100],
    )


def _by(query: QueryDict) -> reads.By:
    raw = query.get("by", "") or "day"
    for choice in BY:
        if raw == choice:
            return choice
    raise BadFilter(f"by: expected one of {', '.join(BY)}, got {raw!r}")


def _opens(group: Group, by: str, base: dict[str, str]) -> str:
    """Where a row leads: a session's run (or collection); any other row, the sessions
    behind it (this overview, narrowed to it, by session)."""
    if by == "session":
        return f"/{group.link}/"
    narrowed = {**base, "by": "session"}
    if by in TIME:
        first = dt.date.fromisoformat(group.key + "-01" if by == "month" else group.key)
        if by == "day":
            last = first
        elif by == "week":
            last = first + dt.timedelta(days=6)
        else:
            last = first.replace(day=calendar.monthrange(first.year, first.month)[1])
        narrowed.update(since=first.isoformat(), until=last.isoformat())
    elif not group.key.startswith("("):
        narrowed[by] = group.key
    return "?" + urlencode(narrowed)


LABEL_CHARS = 24
"""Characters of a row's label under its bar (the whole label is in the hover box)."""


def _figure(groups: list[Group], by: str) -> dict[str, Any]:
    # Labels come from the logs (session titles): escaped, as plotly.js applies some
    # HTML tags in them.
    full = [plain(g.label) for g in groups]
    short = [
        plain(g.label if len(g.label) <= LABEL_CHARS else g.label[: LABEL_CHARS - 1] + "…")
        for g in groups
    ]
    # Each bar is its position (two sessions may share a title); the axis names them.
    positions = list(range(len(groups)))
    return {
        "data": [
            {
                "type": "bar",
                "x": positions,
                "y": [round(g.cost, 4) for g in groups],
                "name": "measured cost ($)",
                "marker": {"color": "#2C7FB8"},
                "customdata": [
                    [name, g.total, g.responses, len(g.runs)]
                    for name, g in zip(full, groups, strict=True)
                ],
                "hovertemplate": "%{customdata[0]}<br>$%{y:.2f}<br>%{customdata[1]:,} tokens "
                "in %{customdata[2]:,} responses of %{customdata[3]:,} runs<extra></extra>",
            }
        ],
        "layout": {
            "margin": {"l": 60, "r": 10, "t": 10, "b": 10},
            "yaxis": {"title": {"text": "measured cost ($)"}, "rangemode": "tozero"},
            "xaxis": {
                "tickmode": "array",
                "tickvals": positions,
                "ticktext": short,
                "automargin": True,
            },
            "plot_bgcolor": "#FFFFFF",
            "paper_bgcolor": "#FFFFFF",
        },
    }


def _csv(rows: list[Group], by: str) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="contextsim-overview-by-{by}.csv"'
    out = csv.writer(response)
    out.writerow(
        [
            by,
            "responses",
            "runs",
            "input",
            "cache_read",
            "cache_write",
            "output",
            "cost_usd",
            "unpriced_responses",
            "compactions",
            "rejected_requests",
            "rejected_over_the_window",
        ]
    )
    for g in rows:
        label = "'" + g.label if g.label[:1] in ("=", "+", "-", "@") else g.label  # no formula
        out.writerow(
            [
                label,
                g.responses,
                len(g.runs),
                g.input,
                g.cache_read,
                g.cache_write,
                g.output,
                round(g.cost, 6),
                g.unpriced,
                g.compactions,
                g.rejected,
                g.overflowed,
            ]
        )
    return response
