"""Saving core runs: their messages with token counts for every estimator, and a
skeleton per estimator.

Counting and building take most of an import's time and on SQLite one writer at a time
holds the database, so no transaction waits on counting. A small input is counted first
(`prepare`) and written in one transaction (`write`, `do_save_runs`). An upload is
staged (`do_stage_run`, `do_fill_run`): its run, unseen, gets its messages a batch at a
time, each batch counted by the estimator it is first shown with and then written in its
own short transaction; one last short transaction shows it (`do_publish_runs`). The
other estimators'
counts, the real tokenizers' (estimators.SLOW) most of the time of a large import, are
made after it is shown, by webapp.store.actions.derivation. A long import never keeps an
append or a sign-in waiting past the busy timeout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from contextsim import model as core
from contextsim.counting import skeleton
from contextsim.counting.builder import SkeletonBuilder
from contextsim.counting.estimators import ESTIMATORS, SHOWN_FIRST, CountMemo
from contextsim.ingest.base import ParsedFile
from webapp.models import Message, Run, RunSkeleton, Upload, Visibility
from webapp.store.actions.rows import MessageRow, insert_messages, message_row, storable
from webapp.store.actions.sessions import do_join_sessions

STAGE_ROWS = 2_000
"""Messages counted and written per transaction by `stage`."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """One core run with its rows built and counted, ready to be written."""

    run: core.Run
    messages: list[MessageRow]
    skeletons: dict[str, Any]


def prepare(
    run: core.Run, estimators: Sequence[str] | None = None, memo: CountMemo | None = None
) -> Prepared:
    """Count each message's tokens once per estimator (all registered ones unless
    `estimators` names some; through `memo` when given, which may hold counts made
    before) and build the rows and skeletons; writes nothing."""
    chosen = {n: ESTIMATORS[n] for n in (estimators or ESTIMATORS)}
    memo = memo if memo is not None else CountMemo()
    rows = [message_row(m, chosen, memo) for m in run.messages]
    builder = SkeletonBuilder(list(chosen.values()), memo)
    builder.add(run.messages, [row.content_hash for row in rows])
    built = builder.finish(run)
    skeletons = {name: storable(skeleton.to_dict(sk)) for name, sk in built.items()}
    return Prepared(run, rows, skeletons)


def write(
    prepared: Prepared,
    *,
    owner: User | None,
    upload: Upload | None = None,
    visibility: str = Visibility.PRIVATE,
    demo_key: str = "",
    counting: Sequence[str] = (),
) -> Run:
    """Write one prepared run, its messages and skeletons (call it in a transaction);
    `counting`: the estimators it was not counted by, left to a job (Run.counting)."""
    stored = _create(
        prepared.run, owner, upload, visibility, demo_key, ready=True, counting=counting
    )
    insert_messages(stored.pk, 0, prepared.messages)
    RunSkeleton.objects.bulk_create(
        RunSkeleton(run=stored, estimator=name, data=data)
        for name, data in prepared.skeletons.items()
    )
    return stored


def _create(
    run: core.Run,
    owner: User | None,
    upload: Upload | None,
    visibility: str,
    demo_key: str,
    *,
    ready: bool,
    counting: Sequence[str] = (),
) -> Run:
    return Run.objects.create(
        owner=owner,
        upload=upload,
        visibility=visibility,
        demo_key=demo_key,
        ready=ready,
        counting=list(counting),
        **facts_of(run),
        message_count=len(run.messages),
        **figures_after(NO_FIGURES, run.messages),
    )


NO_FIGURES: dict[str, int | None] = {
    "request_count": 0,
    "requests_with_usage": 0,
    "peak_measured_context": None,
    "tool_call_count": 0,
}
"""The figures of a stored run of no message (see figures_after)."""


def figures_after(
    figures: dict[str, int | None], messages: Sequence[core.Message]
) -> dict[str, int | None]:
    """A stored run's figures (the fields of NO_FIGURES) once `messages` are added at
    its end: computed from what they were, never read again from every message."""
    measured = [m.usage.context for m in messages if m.usage is not None]
    peak = figures["peak_measured_context"]
    if measured:
        peak = max(peak or 0, *measured)
    return {
        "request_count": (figures["request_count"] or 0)
        + sum(m.role == "assistant" for m in messages),
        "requests_with_usage": (figures["requests_with_usage"] or 0) + len(measured),
        "peak_measured_context": peak,
        "tool_call_count": (figures["tool_call_count"] or 0)
        + sum(len(m.tool_calls) for m in messages),
    }


def rejections_of(run: core.Run) -> list[dict[str, Any]]:
    """The run's rejections as Run.rejections stores them."""
    return [
        {
            "before_message": r.before_message,
            "reason": storable(r.reason[:300]),
            "overflow": r.overflow,
            "time": r.time,
        }
        for r in run.rejections
    ]


def facts_of(run: core.Run) -> dict[str, Any]:
    """The fields of a stored run that the core run's facts give (not its messages)."""
    return {
        "title": storable(run.title[:300]) or "untitled run",
        "format": run.format,
        "model": storable(run.model[:120]),
        "session_id": storable(run.session_id[:200]),
        "parent_session_id": storable(run.parent_session_id[:200]),
        "subagent": run.subagent,
        "compactions": [
            {
                "before_message": c.before_message,
                "pre_tokens": c.pre_tokens,
                "trigger": storable(c.trigger),
            }
            for c in run.compactions
        ],
        "rejections": rejections_of(run),
        "context_window": run.context_window,
        "harness_version": storable(run.harness_version[:40]),
        "project": storable(run.project[:500]),
        "window_source": storable(run.window_source[:300]),
        "compaction_request": run.compaction_request,
        "elisions": [
            {"message": e.message, "from_step": e.from_step, "text": storable(e.text)}
            for e in run.elisions
        ],
    }


def do_stage_run(
    run: core.Run | None = None,
    *,
    owner: User | None,
    upload: Upload | None,
    count_now: bool = False,
) -> Run:
    """The row of `run` (or of a run whose facts come at the end, `Filling.finish`) as a
    run nobody sees yet (`ready` False), its messages still to be written (`do_fill_run`,
    or `Filling`). `do_publish_runs` shows it; a failed import deletes it
    (`do_drop_runs`). Its messages are counted by the estimator it is first shown with
    (estimators.SHOWN_FIRST); every other estimator's counts are left to
    webapp.store.actions.derivation (`counting`): the real tokenizers are most of a large
    import's time, and the other fast ones cost as much again as everything else before
    the run can be browsed. A small file imported while its uploader waits is counted by
    every estimator as it is written (`count_now`): reading its messages back to count
    them would cost more than counting them then."""
    facts = run if run is not None else core.Run(title="importing…", messages=())
    later = [] if count_now else [name for name in ESTIMATORS if name != SHOWN_FIRST]
    return _create(facts, owner, upload, Visibility.PRIVATE, "", ready=False, counting=later)


def do_fill_run(
    stored: Run, run: core.Run, written: Callable[[int], None] = lambda n: None
) -> None:
    """Write the messages of `run` into the staged `stored` (see Filling), STAGE_ROWS
    at a time; `written` is told how many messages are written before each batch and
    at the end (it may raise to stop: a job that lost its lease)."""
    filling = Filling(stored)
    for start in range(0, len(run.messages), STAGE_ROWS):
        written(start)
        filling.add(run.messages[start : start + STAGE_ROWS])
    written(len(run.messages))
    filling.finish(run)


class Filling:
    """A staged run written a batch of messages at a time: each batch counted by the
    estimators not left to count later (`do_stage_run`: the one it is first shown with), then
    written in its own short transaction (so the write lock never grows with the file,
    and the batch can be let go), and fed to their skeletons; `finish` writes the
    run's facts and those skeletons. The others are made with the counts left to make
    (webapp.store.actions.derivation) or when first shown (webapp.store.reads)."""

    def __init__(self, stored: Run) -> None:
        self.stored = stored
        self.estimators = {n: e for n, e in ESTIMATORS.items() if n not in stored.counting}
        self.memo = CountMemo()
        self.builder = SkeletonBuilder(list(self.estimators.values()), self.memo)
        self.figures = dict(NO_FIGURES)

    @property
    def written(self) -> int:
        return self.builder.size

    def add(self, messages: Sequence[core.Message]) -> None:
        start = self.written
        rows = [message_row(m, self.estimators, self.memo) for m in messages]
        self.builder.add(messages, [row.content_hash for row in rows])
        with transaction.atomic():
            # Its text is indexed for search once the run is shown (imports._index):
            # indexing took a fifth of the time until then.
            insert_messages(self.stored.pk, start, rows, indexed=False)
        self.figures = figures_after(self.figures, messages)

    def finish(self, facts: core.Run) -> None:
        """Write the run's facts (`facts`' messages are not read: they are those added)
        and the skeletons built meanwhile."""
        stored = self.stored
        for name, value in facts_of(facts).items():
            setattr(stored, name, value)
        stored.message_count = self.written
        for name, value in self.figures.items():
            setattr(stored, name, value)
        stored.save()
        for name, sk in self.builder.finish(facts).items():
            data = storable(skeleton.to_dict(sk))
            RunSkeleton.objects.create(run=stored, estimator=name, data=data)


def do_publish_runs(staged: Sequence[Run], owner: User | None) -> list[Run]:
    """Show staged runs, joined to their sessions' collections (call it in the
    transaction that records the import done)."""
    made = Run.all_objects.filter(pk__in=[r.pk for r in staged], ready=False).update(ready=True)
    if made != len(staged):
        raise RuntimeError(f"{len(staged) - made} staged run(s) were deleted meanwhile")
    shown = list(Run.objects.filter(pk__in=[r.pk for r in staged]).order_by("pk"))
    do_join_sessions(owner, shown)
    return shown


def do_drop_runs(runs: Sequence[Run]) -> None:
    """Delete staged runs (an import that failed), their messages STAGE_ROWS per
    transaction, so deleting a big one holds no long write lock."""
    for run in runs:
        if not Run.all_objects.filter(pk=run.pk, ready=False).exists():
            continue
        while True:
            with transaction.atomic():
                batch = Message.objects.filter(run_id=run.pk).values_list("pk", flat=True)
                ids = list(batch[:STAGE_ROWS])
                Message.objects.filter(pk__in=ids).delete()
            if len(ids) < STAGE_ROWS:
                break
        with transaction.atomic():
            Run.all_objects.filter(pk=run.pk, ready=False).delete()


def do_drop_staged(upload: Upload) -> int:
    """Delete the unfinished runs of `upload`, left by an import whose worker was lost;
    returns how many."""
    found = list(Run.all_objects.filter(upload=upload, ready=False))
    do_drop_runs(found)
    return len(found)


def do_write_runs(
    prepared: Sequence[Prepared],
    *,
    owner: User | None,
    upload: Upload | None = None,
    visibility: str = Visibility.PRIVATE,
    demo_key: str = "",
) -> list[Run]:
    """Write prepared runs, a main session and its subagents in one collection with the
    owner's runs of the same session stored before (services.sessions). Call it in a
    transaction: all or nothing."""
    saved = [
        write(p, owner=owner, upload=upload, visibility=visibility, demo_key=demo_key)
        for p in prepared
    ]
    do_join_sessions(owner, saved)
    for run in saved:
        run.refresh_from_db(fields=["collection"])
    return saved


def do_save_runs(
    parsed: ParsedFile,
    *,
    owner: User | None,
    upload: Upload | None = None,
    visibility: str = Visibility.PRIVATE,
    demo_key: str = "",
    estimators: Sequence[str] | None = None,
    memo: CountMemo | None = None,
) -> list[Run]:
    """Save every run of `parsed` (all or nothing): counted first (through `memo` when
    given), then written in one transaction. `estimators` limits the counting (default:
    all)."""
    prepared = [prepare(run, estimators, memo) for run in parsed.runs]
    with transaction.atomic():
        return do_write_runs(
            prepared, owner=owner, upload=upload, visibility=visibility, demo_key=demo_key
        )


def do_save_run(
    run: core.Run,
    *,
    owner: User | None,
    upload: Upload | None = None,
    visibility: str = Visibility.PRIVATE,
    demo_key: str = "",
    estimators: Sequence[str] | None = None,
) -> Run:
    """Save one core run and its messages (counted before the transaction)."""
    prepared = prepare(run, estimators)
    with transaction.atomic():
        return write(prepared, owner=owner, upload=upload, visibility=visibility, demo_key=demo_key)
