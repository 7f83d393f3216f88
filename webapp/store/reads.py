"""Data derived from a stored run and kept beside it: its skeleton per estimator and
its estimator comparison. Neither is a source of truth: each is computed from the
stored messages on first use and kept, so a dropped one simply comes back. Selectors
and services both read through here; it imports only the models and the core."""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import suppress
from dataclasses import replace
from typing import Any

from django.db import IntegrityError, transaction

from contextsim import model as core
from contextsim.analysis.estimator_report import compare_text, run_text
from contextsim.counting import skeleton
from contextsim.counting.builder import SkeletonBuilder
from contextsim.counting.estimators import ESTIMATORS, Estimator, seed_counts
from contextsim.counting.skeleton import Skeleton, from_dict
from contextsim.systems.native.format import parse_message
from webapp.models import EstimatorReport, Message, Run, RunSkeleton
from webapp.runtime.statements import update_rows

MESSAGE_FIELDS = (
    "index",
    "role",
    "parts",
    "compact_summary",
    "usage_input",
    "usage_cache_read",
    "usage_cache_write",
    "usage_output",
    "timestamp",
)
"""The columns `stored_message` reads, in its order."""


def stored_run(run: Run) -> core.Run:
    """The core run of a stored run (text included)."""
    rows = Message.objects.filter(run=run).order_by("index").values_list(*MESSAGE_FIELDS)
    return replace(run_facts(run), messages=tuple(stored_message(run, row) for row in rows))


def stored_message(run: Run, row: tuple[Any, ...]) -> core.Message:
    """The core message of one row of MESSAGE_FIELDS of `run`."""
    index, role, parts, summary, u_in, u_read, u_write, u_out, when = row
    usage = (
        None
        if u_in is None
        else {
            "input_tokens": u_in,
            "cache_read": u_read or 0,
            "cache_write": u_write or 0,
            "output_tokens": u_out or 0,
        }
    )
    data = {
        "role": role,
        "content": parts,
        "usage": usage,
        "compact_summary": summary,
        "timestamp": when.timestamp() if when is not None else None,
    }
    return parse_message(run.title, f"message {index}", data)


def run_facts(run: Run) -> core.Run:
    """The core run of a stored run without its messages: what a skeleton takes from
    the run beside them (skeleton_builder.SkeletonBuilder.finish)."""
    compactions = tuple(
        core.Compaction(c["before_message"], c.get("pre_tokens"), c.get("trigger", ""))
        for c in run.compactions
    )
    return core.Run(
        title=run.title,
        messages=(),
        format=run.format,
        model=run.model,
        session_id=run.session_id,
        parent_session_id=run.parent_session_id,
        subagent=run.subagent,
        compactions=compactions,
        context_window=run.context_window,
        harness_version=run.harness_version,
        compaction_request=run.compaction_request,
        elisions=tuple(core.Elision(e["message"], e["from_step"], e["text"]) for e in run.elisions),
    )


def build_skeleton(run: Run, estimator: str, counter: Estimator) -> dict[str, object]:
    """Build, store and return the skeleton data of `run` under `estimator` (whose
    counting is `counter`). Messages counted at import are not tokenized again.

    A run that changed while it was read (a live run's append) keeps no skeleton: what
    was built is returned but not stored under the newer revision."""
    return skeleton.to_dict(_built(run, estimator, counter))


def _built(run: Run, estimator: str, counter: Estimator) -> Skeleton:
    revision = Run.objects.values_list("revision", flat=True).get(pk=run.pk)
    rows = Message.objects.filter(run=run).order_by("index")
    known = list(rows.values_list("pk", "content_hash", "counts"))
    seed_counts((estimator, key, c[estimator]) for _, key, c in known if estimator in c)
    builder = SkeletonBuilder([counter])
    builder.add(stored_run(run).messages)
    built = builder.finish(run_facts(run))[counter.name]
    if run.last_append is not None:  # a live run: its next view extends this builder
        _keep_builder(run, estimator, revision, builder)
    data = skeleton.to_dict(built)
    try:
        with transaction.atomic():
            if Run.objects.filter(pk=run.pk, revision=revision).exists():
                stale = RunSkeleton.objects.filter(run=run, estimator=estimator)
                stale.exclude(revision=revision).delete()
                RunSkeleton.objects.create(
                    run=run, estimator=estimator, data=data, revision=revision
                )
                if ESTIMATORS.get(estimator) is counter:
                    _keep_counts(estimator, known, built.tokens)
    except IntegrityError:
        pass  # another request built it at the same time
    return built


def _keep_counts(
    estimator: str, known: list[tuple[int, str, dict[str, int]]], tokens: tuple[int, ...]
) -> None:
    """Store `estimator`'s counts (`tokens`, by message index) with the messages of
    `known` (pk, content hash, counts; in index order, of the revision the skeleton was
    built from) that lack them: the real tokenizers' counts a live run left for later
    (message_rows.LIVE_COUNTED) or an import gave up on are made once, not again by
    every process that builds the skeleton. Call it in a transaction: the counts are
    read again under the write lock, so those an import's counting stored meanwhile
    (webapp.store.actions.counting) are kept, not overwritten by the ones read before."""
    if len(known) != len(tokens):
        return  # not the messages the skeleton was built from
    missing = {pk: tokens[i] for i, (pk, _, counts) in enumerate(known) if estimator not in counts}
    ids = list(missing)
    for first in range(0, len(ids), _LOCKED_READ):
        rows = Message.objects.select_for_update().filter(pk__in=ids[first : first + _LOCKED_READ])
        update_rows(
            [
                Message(pk=pk, counts={**counts, estimator: missing[pk]})
                for pk, counts in rows.values_list("pk", "counts")
                if estimator not in counts
            ],
            ["counts"],
        )


_LOCKED_READ = 5_000
"""Messages read again per statement by `_keep_counts` (SQLite's limit of bound values
is 32,766)."""


_BUILDERS: OrderedDict[tuple[str, str], tuple[int, str, SkeletonBuilder]] = OrderedDict()
_BUILDERS_SIZE = 8
"""Builders of the live runs' skeletons this process built last, by (run, estimator),
with the revision they were fed up to: a live run's next view feeds the messages added
since (`_extended`) instead of reading and building the whole run again. Only live
runs' (a builder holds per-message lists: an imported run of 200,000 messages is not
kept for appends that will not come)."""


_FEEDING = threading.Lock()


def _keep_builder(run: Run, estimator: str, revision: int, builder: SkeletonBuilder) -> None:
    counter = builder.estimators[0].name
    _BUILDERS[(run.public_id, estimator)] = (revision, counter, builder)
    _BUILDERS.move_to_end((run.public_id, estimator))
    while len(_BUILDERS) > _BUILDERS_SIZE:
        _BUILDERS.popitem(last=False)


def _extended(run: Run, estimator: str) -> Skeleton | None:
    """The skeleton of `run` at its revision from a kept builder of an earlier one,
    fed the messages added since; None when there is none, or the run changed other
    than by messages added at the end (`Run.rewritten`)."""
    with _FEEDING:  # one request at a time feeds a builder
        return _fed(run, estimator)


def _fed(run: Run, estimator: str) -> Skeleton | None:
    found = _BUILDERS.get((run.public_id, estimator))
    if found is None or not run.rewritten <= found[0] <= run.revision:
        return None
    _, counter, builder = found
    rows = list(
        Message.objects.filter(run=run, index__gte=builder.size)
        .order_by("index")
        .values_list(*MESSAGE_FIELDS, "content_hash", "counts")
    )
    current = Run.objects.filter(pk=run.pk).values_list("revision", "rewritten").first()
    if current is None or current[1] > found[0] or (rows and rows[0][0] != builder.size):
        del _BUILDERS[(run.public_id, estimator)]  # rewritten meanwhile: build afresh
        return None
    seed_counts((counter, row[-2], row[-1][counter]) for row in rows if counter in row[-1])
    builder.add([stored_message(run, row[:-2]) for row in rows], [row[-2] for row in rows])
    _keep_builder(run, estimator, current[0], builder)
    return builder.finish(run_facts(run))[counter]


_CACHE: OrderedDict[tuple[str, str, int], Skeleton] = OrderedDict()
_CACHE_SIZE = 64


def skeleton_of(run: Run, estimator: str, counter: Estimator | None = None) -> Skeleton:
    """The run's skeleton under `estimator`, kept in a small in-process cache keyed by
    the run's public id (never reused, unlike a primary key after a deletion) and its
    revision (so a run that grows is read again); built and stored when missing or
    stored in an older layout."""
    key = (run.public_id, estimator, run.revision)
    found = _CACHE.get(key)
    if found is None:
        row = RunSkeleton.objects.filter(
            run=run, estimator=estimator, revision=run.revision
        ).first()
        if row is not None and not skeleton.current(row.data):
            # Stored in an older layout (skeleton.LAYOUT): built again from the messages.
            RunSkeleton.objects.filter(pk=row.pk).delete()
            row = None
        if row is not None:
            found = from_dict(row.data)
        else:
            found = _extended(run, estimator) or _built(
                run, estimator, counter or ESTIMATORS[estimator]
            )
        _CACHE[key] = found
        _forget_older(key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    with suppress(KeyError):  # dropped meanwhile by a view in another thread
        _CACHE.move_to_end(key)
    return found


def _forget_older(key: tuple[str, str, int]) -> None:
    """Drop the cached skeletons of the run's older revisions under the estimator, but
    the newest of them: a live run's next skeleton is extended from the one before
    (contextsim.engine.memory.grown), and nothing older is asked for again. Kept, a followed
    run's last 64 revisions held hundreds of megabytes at 20,000 messages, and the
    garbage collector walked them."""
    public_id, estimator, revision = key
    # A copy of the keys, taken in one C call: views in other threads use the cache too.
    cached = tuple(_CACHE)
    older = sorted(k for k in cached if k[:2] == (public_id, estimator) and k[2] < revision)
    for stale in older[:-1]:
        _CACHE.pop(stale, None)


def estimator_report(run: Run, reference: str) -> dict[str, Any]:
    """The run's comparison by script (see contextsim.analysis.estimator_report.compare_text),
    computed once per reference and kept."""
    found = EstimatorReport.objects.filter(run=run, reference=reference).first()
    if found is not None and set(ESTIMATORS) <= set(found.data["total"]):
        data: dict[str, Any] = found.data
        return data
    data = compare_text(run_text(stored_run(run)), reference)
    if found is not None:
        # An estimator was added since: the stored comparison lacks it.
        EstimatorReport.objects.filter(pk=found.pk).update(data=data)
        return data
    try:
        with transaction.atomic():
            EstimatorReport.objects.create(run=run, reference=reference, data=data)
    except IntegrityError:
        pass  # computed at the same time by another request
    return data
