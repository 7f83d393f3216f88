"""Sessions as trees: a main session and the subagents it started, whichever way they
arrived (one upload of several files, a zip, separate uploads, the API, `tail_run`),
are one collection of their owner's.

A run's session root is its parent's session id (a subagent) or its own (a main run).
Runs of one owner that share a root share a collection, titled by the main run once it
is there."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django.contrib.auth.models import User
from django.db.models import Q

from webapp.models import Collection, Run


def session_root(run: Run) -> str:
    return run.parent_session_id or run.session_id


def do_join_sessions(owner: User | None, runs: Iterable[Run]) -> None:
    """Put each of `runs` in one collection with the owner's other runs of its session
    (stored before or with it); a session of one run has no collection."""
    roots = {session_root(r) for r in runs if session_root(r)}
    for root in sorted(_shared(owner, roots) if len(roots) > 1 else roots):
        _join(owner, root)


def _shared(owner: User | None, roots: set[str]) -> set[str]:
    """The roots among `roots` that two or more of the owner's runs share, in one query
    per CHUNK roots: a batch of many new sessions is mostly of sessions of one run."""
    found: Counter[str] = Counter()
    ordered = sorted(roots)
    for first in range(0, len(ordered), CHUNK):
        chunk = ordered[first : first + CHUNK]
        rows = Run.objects.filter(
            Q(session_id__in=chunk) | Q(parent_session_id__in=chunk), owner=owner
        ).values_list("session_id", "parent_session_id")
        for ids in rows:
            found.update({i for i in ids if i in roots})
    return {root for root, n in found.items() if n > 1}


CHUNK = 400


def _join(owner: User | None, root: str) -> None:
    members = list(
        Run.objects.filter(Q(session_id=root) | Q(parent_session_id=root), owner=owner)
        .select_related("collection")
        .order_by("subagent", "id")
    )
    if len(members) < 2:
        return
    main = next((r for r in members if not r.subagent and r.session_id == root), None)
    collection = next((r.collection for r in members if r.collection is not None), None)
    title = main.title if main is not None else f"session {root}"
    if collection is None:
        visibility = (main or members[0]).visibility
        collection = Collection.objects.create(owner=owner, visibility=visibility, title=title)
    elif main is not None and collection.title != main.title:
        collection.title = main.title
        collection.save(update_fields=["title"])
    Run.objects.filter(pk__in=[r.pk for r in members]).exclude(collection=collection).update(
        collection=collection
    )
