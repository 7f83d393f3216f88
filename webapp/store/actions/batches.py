"""Many live runs brought in step at once, as a receiver of many conversations needs:
new runs created in one statement and their messages written in one batch, runs that
only grew appended together, their figures updated in one statement. One run at a
time (webapp.store.actions.appends) costs a dozen queries each; a batch of spans touching
hundreds of conversations would spend its time there.

Call these in the caller's transaction, holding whatever lock orders concurrent
writers of the same runs (the receiver locks its span groups).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.utils import timezone

from contextsim import model as core
from webapp.models import Run, Visibility
from webapp.store.actions.rows import MessageRow, insert_batches, update_rows
from webapp.store.actions.saving import NO_FIGURES, facts_of, figures_after
from webapp.store.actions.sessions import do_join_sessions


@dataclass(frozen=True, slots=True)
class Growth:
    """Messages counted (`rows`) to add at the end of a stored live run whose header
    (title, model, compactions) is unchanged."""

    stored: Run
    messages: Sequence[core.Message]
    rows: Sequence[MessageRow]


def do_create_runs(
    owner: User, made: Sequence[tuple[core.Run, str, Sequence[MessageRow]]]
) -> list[Run]:
    """Save each (run, stream key, its messages' rows) as a private live run of
    `owner`, joined to its session; returns the stored runs in the same order. Their
    skeletons are built when first shown (webapp.store.reads), as a live run's are after
    every append."""
    now = timezone.now()
    runs = [
        Run(
            owner=owner,
            visibility=Visibility.PRIVATE,
            ready=True,
            counting=[],
            **facts_of(run),
            message_count=len(run.messages),
            **figures_after(NO_FIGURES, run.messages),
            last_append=now,
            stream_key=key[:600],
        )
        for run, key, _ in made
    ]
    stored = Run.objects.bulk_create(runs)
    insert_batches([(r.pk, 0, rows) for r, (_, _, rows) in zip(stored, made, strict=True)])
    do_join_sessions(owner, stored)
    return stored


def do_grow_runs(growths: Sequence[Growth]) -> None:
    """Add each growth's messages at the end of its run: one more revision, figures
    carried on from the run's own (never read again from its messages); the runs'
    skeletons and estimator reports are dropped (the next view extends or rebuilds
    them). Each `stored` run is updated in place."""
    if not growths:
        return
    insert_batches([(g.stored.pk, g.stored.message_count, g.rows) for g in growths])
    now = timezone.now()
    for g in growths:
        run = g.stored
        figures = figures_after({k: getattr(run, k) for k in NO_FIGURES}, g.messages)
        for name, value in figures.items():
            setattr(run, name, value)
        run.message_count += len(g.messages)
        run.revision += 1
        run.last_append = now
    fields = ["message_count", "revision", "last_append", *NO_FIGURES]
    runs = [g.stored for g in growths]
    update_rows(runs, fields)
