"""Storing what is derived from a run's messages, by jobs only (reads never write):
the counts of the estimators its import left to count (Run.counting: the real
tokenizers, estimators.SLOW, and the fast ones but the one it was first shown with)
once the import made it browsable, and the skeletons; the same for a live run once it
is idle, or a run whose stored skeletons are of an older layout (`do_derive_pending`, a
periodic job); an estimator report a view computed (`do_store_report`).

The messages are read back from the database a batch at a time, so the file's runs are
not held while the tokenizers' tables are; each batch's counts are written in their own
short transaction. What an attempt whose worker was lost counted is not counted again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from contextsim.counting import skeleton
from contextsim.counting.builder import SkeletonBuilder
from contextsim.counting.estimators import ESTIMATORS, CountMemo
from webapp.dashboard.state import BadQuery
from webapp.models import EstimatorReport, ImportJob, Message, Run, RunSkeleton, Upload
from webapp.store.actions.rows import BATCH, storable
from webapp.store.actions.saving import STAGE_ROWS
from webapp.store.actions.shares import do_store_shares, stale
from webapp.store.reads import MESSAGE_FIELDS, report_of, run_facts, stored_message

logger = logging.getLogger(__name__)


def do_count_rest(run: Run, counted: Callable[[int], None] = lambda n: None) -> None:
    """Count every message of `run` by each estimator in `run.counting`, store the
    counts and those estimators' skeletons (and the skeletons of the others that the
    import left to build), then clear `run.counting`. `counted` is
    told how many messages are done before each batch and at the end (it may raise to
    stop: a job that lost its lease)."""
    names = [n for n in run.counting if n in ESTIMATORS]
    found = Run.all_objects.filter(pk=run.pk).values_list("revision", flat=True).first()
    if found is None:
        return  # deleted meanwhile: nothing to count
    revision = found
    # The fast estimators' skeletons the import left for later are built here too,
    # from the counts stored with the messages.
    built = set(RunSkeleton.objects.filter(run=run).values_list("estimator", flat=True))
    later = [n for n in ESTIMATORS if n not in names and n not in built]
    memo = CountMemo()
    builder = SkeletonBuilder([ESTIMATORS[n] for n in [*names, *later]], memo)
    rows = Message.objects.filter(run=run).order_by("index")
    after = -1
    while True:
        counted(builder.size)
        fields = ("pk", "counts", "content_hash", *MESSAGE_FIELDS)
        batch = list(rows.filter(index__gt=after).values_list(*fields)[:STAGE_ROWS])
        if not batch:
            break
        after = batch[-1][3]
        messages = [stored_message(run, row[3:]) for row in batch]
        keys = [str(row[2]) for row in batch]
        # Counts stored at import or by an earlier attempt are taken as they are.
        memo.seed((n, row[2], c) for row in batch for n, c in row[1].items())
        builder.add(messages, keys)
        updates = []
        for (pk, counts, *_), message, key in zip(batch, messages, keys, strict=True):
            if all(n in counts for n in names):
                continue
            fresh = {n: memo.count(message, ESTIMATORS[n], key) for n in names}
            updates.append(Message(pk=pk, counts={**counts, **fresh}))
        with transaction.atomic():
            Message.objects.bulk_update(updates, ["counts"], batch_size=BATCH)
    skeletons = builder.finish(run_facts(run))
    with transaction.atomic():
        if not Run.all_objects.filter(pk=run.pk, revision=revision).exists():
            return  # changed meanwhile: its new revision is derived later
        for name, sk in skeletons.items():
            RunSkeleton.objects.update_or_create(
                run=run,
                estimator=name,
                defaults={"data": storable(skeleton.to_dict(sk)), "revision": revision},
            )
        Run.all_objects.filter(pk=run.pk).update(counting=[])
    run.counting = []


def do_give_up(upload: Upload, why: str) -> list[str]:
    """Leave the counts still to make of the upload's shown runs to the periodic
    derivation (`do_derive_pending`; views count what they need meanwhile, without
    storing it), saying `why`: the job's warnings
    with it, and that their text is not searched yet when the import stopped while
    indexing it (webapp.ingest.uploads.services.index_left indexes it later)."""
    Run.objects.filter(upload=upload).update(counting=[])
    job = ImportJob.objects.values_list("warnings", "stage").get(upload=upload)
    said = [*job[0], f"{why}: the other estimators' counts are made later, in the background"]
    if job[1] == "indexing":
        said.append("their messages are not found by search until their text is indexed")
    return said


IDLE = timedelta(seconds=60)
"""How long a live run must have had no append before its derived data is stored:
while it grows every view has its own revision, and storing each would be wasted."""
DERIVE_AT_ONCE = 20
"""Runs derived per batch (pending reads them again after each batch)."""
DERIVE_SECONDS = 20.0
"""Seconds a tick of the periodic job goes on deriving batches (it runs every 30 s)."""


def do_derive(run: Run) -> None:
    """Store what is derived from `run` at its revision and not stored yet: every
    registered estimator's counts its messages lack and every estimator's skeleton
    (do_count_rest with them all), then where its context went (the overview's
    shares: webapp.store.actions.shares). Rows of the run's other revisions are
    replaced. A run that changes meanwhile keeps its new revision's data to a later
    derivation (what was written is of the revision read, which the reads then ignore)."""
    stored = Run.objects.filter(pk=run.pk).first()
    if stored is None:
        return
    if stored.counting:  # a live run first read from a file: counted by one estimator
        do_count_rest(stored)
    elif _current_skeletons(stored) < len(ESTIMATORS):
        stored.counting = list(ESTIMATORS)
        do_count_rest(stored)
    try:
        do_store_shares(stored)
    except BadQuery as exc:  # a run no simulation can take: its page says why too
        logger.warning("run %s: no context shares: %s", stored.public_id, exc)


def _current_skeletons(run: Run) -> int:
    return RunSkeleton.objects.filter(
        run=run, revision=run.revision, data__layout=skeleton.LAYOUT
    ).count()


def pending(limit: int = DERIVE_AT_ONCE) -> list[Run]:
    """Runs to do_derive: shown, not being counted by their import (a live run's counts
    left for later are counted here), idle (no append for IDLE) and without a skeleton
    of every registered estimator, in the current layout, for their current revision (a
    live run after its last append, a run whose stored skeletons are of an older layout
    or were never made), or without their current shares (webapp.store.actions.shares)."""
    current = Count(
        "skeletons",
        filter=Q(skeletons__revision=F("revision"), skeletons__data__layout=skeleton.LAYOUT),
    )
    idle = Q(last_append__isnull=True) | Q(last_append__lt=timezone.now() - IDLE)
    found = (
        Run.objects.filter(idle)
        .filter(Q(counting=[]) | Q(upload__isnull=True))
        .annotate(current=current)
        .filter(Q(current__lt=len(ESTIMATORS)) | stale())
        .order_by("pk")
    )
    return list(found[:limit])


def do_derive_pending(limit: int = DERIVE_AT_ONCE, seconds: float | None = None) -> int:
    """Derive the pending runs (`pending`), `limit` of them; with `seconds`, batches of
    `limit` again until that time is spent (a tick of the periodic job: a long history
    is counted in minutes, not one batch per tick). Returns how many."""
    deadline = None if seconds is None else time.monotonic() + seconds
    done = 0
    while True:
        runs = pending(limit)
        for run in runs:
            do_derive(run)
        done += len(runs)
        if not runs or deadline is None or time.monotonic() >= deadline:
            return done


def do_store_report(run: Run, reference: str) -> None:
    """Compute and store the run's comparison by script against `reference` for its
    revision (webapp.store.reads.estimator_report made it for a view meanwhile)."""
    revision = run.revision
    data = report_of(run, reference)
    with transaction.atomic():
        if Run.objects.filter(pk=run.pk, revision=revision).exists():
            EstimatorReport.objects.update_or_create(
                run=run, reference=reference, defaults={"data": data, "revision": revision}
            )
