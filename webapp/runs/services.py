"""Managing runs: rename, notes, tags, delete. Only the owner gets here (the views ask
selectors.runs.get_owned_run); every write says what was wrong and saves nothing then."""

from __future__ import annotations

import re

from django.db import transaction

from webapp.models import Collection, Message, Run, ShareLink, SweepCell, Tag

MAX_TITLE = 300
MAX_NOTES = 20_000
MAX_TAGS = 20
TAG = re.compile(r"[a-z0-9][a-z0-9._-]{0,39}")
"""A tag: lower case letters, digits, '.', '_' or '-', at most 40 characters."""


def parse_tags(text: str) -> list[str]:
    """Tags from what the person typed (separated by commas or spaces), lower-cased, in
    order, each once. Raises ValueError naming a tag that is not one."""
    found: list[str] = []
    for raw in re.split(r"[,\s]+", text.strip()):
        if not raw:
            continue
        tag = raw.lower()
        if not TAG.fullmatch(tag):
            raise ValueError(
                f"tags: {raw!r} is not a tag (letters, digits, '.', '_' or '-', "
                "at most 40 characters)"
            )
        if tag not in found:
            found.append(tag)
    if len(found) > MAX_TAGS:
        raise ValueError(f"tags: at most {MAX_TAGS}, got {len(found)}")
    return found


@transaction.atomic
def edit_run(run: Run, title: str, notes: str, tags: str) -> Run:
    """Rename the run, set its notes and its tags (as typed). Raises ValueError naming
    the field that is wrong; nothing is saved then."""
    title = " ".join(title.split())
    if not title:
        raise ValueError("title: a run needs a title")
    if len(title) > MAX_TITLE:
        raise ValueError(f"title: at most {MAX_TITLE} characters, got {len(title)}")
    if len(notes) > MAX_NOTES:
        raise ValueError(f"notes: at most {MAX_NOTES:,} characters, got {len(notes):,}")
    names = parse_tags(tags)
    run.title, run.notes = title, notes.replace("\x00", "")
    run.save(update_fields=["title", "notes"])
    chosen = [Tag.objects.get_or_create(owner_id=run.owner_id, name=n)[0] for n in names]
    run.tags.set(chosen)
    _drop_unused_tags(run.owner_id)
    return run


def deletion_counts(run: Run) -> dict[str, int]:
    """What deleting the run removes with it, to show before asking."""
    return {
        "messages": Message.objects.filter(run=run).count(),
        "share links": ShareLink.objects.filter(run=run).count(),
        "sweep cells": SweepCell.objects.filter(run=run).count(),
    }


@transaction.atomic
def delete_run(run: Run) -> None:
    """Delete the run with its messages, skeletons, estimator reports, share links and
    sweep cells (all by cascade), and its collection when no run is left in it."""
    collection_id = run.collection_id
    owner_id = run.owner_id
    run.delete()
    if collection_id is not None:
        Collection.objects.filter(pk=collection_id, runs=None).delete()
    _drop_unused_tags(owner_id)


def _drop_unused_tags(owner_id: int | None) -> None:
    """No tag is left that tags nothing (the tag filter lists only live ones)."""
    Tag.objects.filter(owner_id=owner_id, runs=None).delete()
