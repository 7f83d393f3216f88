"""Search across runs: the runs whose title, model or session id match (selectors.runs),
and the messages whose text does, each opening the step where it occurs.

Message text is searched by the database, never scanned in Python: SQLite's FTS5 table
and PostgreSQL's full-text index (migration 0014) over the strings of each message's
parts. Words are matched whole (PostgreSQL's "simple" configuration, SQLite's unicode61
tokenizer); every word given must occur."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User
from django.db import connection
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce

from webapp.dashboard.trace import message_text
from webapp.models import Message, Run, Visibility
from webapp.runs.reads import visible_runs

MAX_HITS = 50
SNIPPET = 160
"""Characters of context shown around the first word found."""


@dataclass(frozen=True, slots=True)
class MessageHit:
    """A message whose text matched: its run, its index, the step that shows it (the
    first request that sent it, or the one it answered) and a snippet."""

    run: Run
    index: int
    step: int
    snippet: str


def _words(query: str) -> list[str]:
    return [w for w in re.findall(r"\w+", query.lower()) if w][:8]


def search_messages(user: User | AnonymousUser, query: str) -> list[MessageHit]:
    """Messages of runs this person may see whose text holds every word of `query`,
    newest runs first, at most MAX_HITS."""
    words = _words(query)
    if not words:
        return []
    ids = _matching_ids(words, user.pk if user.is_authenticated else None)
    if not ids:
        return []
    # The step that shows a message: how many replies came before it (one subquery).
    replies = (
        Message.objects.filter(
            run_id=OuterRef("run_id"), role="assistant", index__lt=OuterRef("index")
        )
        .values("run_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    found = (
        Message.objects.filter(pk__in=ids)
        .annotate(step=Coalesce(Subquery(replies), 0))
        .select_related("run")
        .order_by("-run_id", "index")
    )
    return [MessageHit(m.run, m.index, m.step, _snippet(m, words)) for m in found]


def unindexed_runs(user: User | AnonymousUser) -> list[Run]:
    """Runs this person may see whose message text is not indexed yet (an import just
    shown, webapp.ingest.uploads.services, or one that stopped before its text was indexed,
    left to imports.index_left): search finds none of their messages until it is.
    Only SQLite's index is filled after the rows are written."""
    if connection.vendor != "sqlite":
        return []
    return list(visible_runs(user).filter(upload__job__stage="indexing").order_by("-pk")[:20])


def _matching_ids(words: list[str], owner: int | None) -> list[int]:
    visible = "r.ready AND (r.visibility = %s OR r.owner_id = %s)"
    params: list[str | int] = [Visibility.PUBLIC, owner if owner is not None else -1]
    if connection.vendor == "postgresql":
        sql = (
            "SELECT m.id FROM webapp_message m JOIN webapp_run r ON r.id = m.run_id "
            "WHERE jsonb_to_tsvector('simple'::regconfig, m.parts, '[\"string\"]') "
            f"@@ to_tsquery('simple', %s) AND {visible} "
            'ORDER BY m.run_id DESC, m."index" LIMIT %s'
        )
        args = [" & ".join(words), *params, MAX_HITS]
    elif connection.vendor == "sqlite":
        sql = (
            "SELECT m.id FROM webapp_message_fts f JOIN webapp_message m ON m.id = f.rowid "
            "JOIN webapp_run r ON r.id = m.run_id WHERE webapp_message_fts MATCH %s "
            f'AND {visible} ORDER BY m.run_id DESC, m."index" LIMIT %s'
        )
        args = [" ".join(f'"{w}"' for w in words), *params, MAX_HITS]
    else:
        return []
    with connection.cursor() as cursor:
        cursor.execute(sql, args)
        return [row[0] for row in cursor.fetchall()]


def _snippet(message: Message, words: list[str]) -> str:
    text = " ".join(message_text(message.parts).split())
    found = min((i for w in words if (i := text.lower().find(w)) >= 0), default=0)
    start = max(found - SNIPPET // 3, 0)
    cut = text[start : start + SNIPPET]
    return ("…" if start else "") + cut + ("…" if start + SNIPPET < len(text) else "")
