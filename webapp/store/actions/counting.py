"""Counting a shown run's messages with the estimators its import left to count
(Run.counting: the real tokenizers, estimators.SLOW, and the fast ones but the one it
was first shown with) once the import made it browsable, and keeping their skeletons.

The messages are read back from the database a batch at a time, so the file's runs are
not held while the tokenizers' tables are; each batch's counts are written in their own
short transaction. What an attempt whose worker was lost counted is not counted again.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from contextsim.counting import skeleton
from contextsim.counting.builder import SkeletonBuilder
from contextsim.counting.estimators import ESTIMATORS, count_message, seed_counts
from webapp.models import ImportJob, Message, Run, RunSkeleton, Upload
from webapp.store.actions.rows import BATCH, storable
from webapp.store.actions.saving import STAGE_ROWS
from webapp.store.reads import MESSAGE_FIELDS, run_facts, stored_message


def count_rest(run: Run, counted: Callable[[int], None] = lambda n: None) -> None:
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
    builder = SkeletonBuilder([ESTIMATORS[n] for n in [*names, *later]])
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
        seed_counts((n, row[2], c) for row in batch for n, c in row[1].items())
        builder.add(messages, keys)
        updates = []
        for (pk, counts, *_), message, key in zip(batch, messages, keys, strict=True):
            if all(n in counts for n in names):
                continue
            fresh = {n: count_message(message, ESTIMATORS[n], key) for n in names}
            updates.append(Message(pk=pk, counts={**counts, **fresh}))
        with transaction.atomic():
            Message.objects.bulk_update(updates, ["counts"], batch_size=BATCH)
    skeletons = builder.finish(run_facts(run))
    with transaction.atomic():
        for name, sk in skeletons.items():
            RunSkeleton.objects.update_or_create(
                run=run,
                estimator=name,
                defaults={"data": storable(skeleton.to_dict(sk)), "revision": revision},
            )
        Run.all_objects.filter(pk=run.pk).update(counting=[])
    run.counting = []


def give_up(upload: Upload, why: str) -> list[str]:
    """Leave the counts still to make of the upload's shown runs to be made when first
    shown (webapp.store.reads builds what is missing), saying `why`: the job's warnings
    with it, and that their text is not searched yet when the import stopped while
    indexing it (webapp.ingest.uploads.services.index_left indexes it later)."""
    Run.objects.filter(upload=upload).update(counting=[])
    job = ImportJob.objects.values_list("warnings", "stage").get(upload=upload)
    said = [*job[0], f"{why}: the other estimators' counts are made when first shown"]
    if job[1] == "indexing":
        said.append("their messages are not found by search until their text is indexed")
    return said
