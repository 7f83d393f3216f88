"""Reading a stored run: its messages as core messages, its skeleton under an estimator
and its estimator comparison by script. Reads never write: a skeleton or a report that
is not stored for the run's revision is made here in memory (and kept in the store's
cache, webapp.store.cache) while a job stores it (webapp.store.actions.derivation)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from contextsim import model as core
from contextsim.analysis.estimator_report import compare_text, run_text
from contextsim.counting import skeleton
from contextsim.counting.builder import SkeletonBuilder
from contextsim.counting.estimators import ESTIMATORS, CountMemo, Estimator
from contextsim.counting.skeleton import Skeleton, from_dict
from contextsim.systems.native.format import parse_message
from webapp.models import EstimatorReport, Message, Run, RunSkeleton
from webapp.store.cache import CACHE

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
    "usage_cache_write_1h",
    "usage_model",
    "kind",
)
"""The columns `stored_message` reads, in its order."""


def stored_run(run: Run) -> core.Run:
    """The core run of a stored run (text included)."""
    rows = Message.objects.filter(run=run).order_by("index").values_list(*MESSAGE_FIELDS)
    return replace(run_facts(run), messages=tuple(stored_message(run, row) for row in rows))


def stored_message(run: Run, row: tuple[Any, ...]) -> core.Message:
    """The core message of one row of MESSAGE_FIELDS of `run`."""
    index, role, parts, summary, u_in, u_read, u_write, u_out, when, u_hour, u_model, kind = row
    usage = (
        None
        if u_in is None
        else {
            "input_tokens": u_in,
            "cache_read": u_read or 0,
            "cache_write": u_write or 0,
            "output_tokens": u_out or 0,
            "cache_write_1h": u_hour or 0,
            "model": u_model or "",
        }
    )
    data = {
        "role": role,
        "content": parts,
        "usage": usage,
        "compact_summary": summary,
        "timestamp": when.timestamp() if when is not None else None,
        "attachment": kind == "attachment",
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
        project=run.project,
        window_source=run.window_source,
        compaction_request=run.compaction_request,
        elisions=tuple(core.Elision(e["message"], e["from_step"], e["text"]) for e in run.elisions),
        rejections=tuple(
            core.Rejection(r["before_message"], r["reason"], r["overflow"], r.get("time"))
            for r in run.rejections
        ),
    )


def skeleton_of(run: Run, estimator: str, counter: Estimator | None = None) -> Skeleton:
    """The run's skeleton under `estimator` (counted by `counter`, default the
    registered estimator of that name) at the run's revision: from the store's cache,
    else the stored one, else a live run's kept builder fed the messages added since,
    else built from the messages. Writes nothing."""
    key = (run.public_id, estimator, run.revision)
    found = CACHE.skeleton(key)
    if found is not None:
        return found
    row = (
        RunSkeleton.objects.filter(run=run, estimator=estimator, revision=run.revision)
        .values_list("data", flat=True)
        .first()
    )
    if row is not None and skeleton.current(row):
        found = from_dict(row)
    else:  # none stored, or stored in an older layout (skeleton.LAYOUT)
        found = _extended(run, estimator) or _fresh(run, estimator, counter)
    CACHE.keep_skeleton(key, found)
    return found


def _fresh(run: Run, estimator: str, counter: Estimator | None) -> Skeleton:
    """Built from the messages; a live run's builder is kept for its next revision."""
    counter = counter or ESTIMATORS[estimator]
    revision = run.revision
    known = Message.objects.filter(run=run).values_list("content_hash", "counts")
    memo = CountMemo()
    memo.seed((counter.name, k, c[counter.name]) for k, c in known if counter.name in c)
    builder = SkeletonBuilder([counter], memo)
    builder.add(stored_run(run).messages)
    built = builder.finish(run_facts(run))[counter.name]
    if run.last_append is not None:  # a live run: its next view extends this builder
        CACHE.keep_builder(run.public_id, estimator, revision, counter.name, builder)
    return built


def _extended(run: Run, estimator: str) -> Skeleton | None:
    """The skeleton of `run` at its revision from a kept builder of an earlier one, fed
    the messages added since; None when there is none, or the run changed other than by
    messages added at the end (`Run.rewritten`). The builder is out of the cache while
    it is fed, so no lock is held meanwhile."""
    found = CACHE.take_builder(run.public_id, estimator)
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
        return None  # rewritten meanwhile: built afresh
    builder.memo.seed((counter, row[-2], row[-1][counter]) for row in rows if counter in row[-1])
    builder.add([stored_message(run, row[:-2]) for row in rows], [row[-2] for row in rows])
    CACHE.keep_builder(run.public_id, estimator, current[0], counter, builder)
    return builder.finish(run_facts(run))[counter]


def estimator_report(run: Run, reference: str) -> tuple[dict[str, Any], bool]:
    """The run's comparison by script against `reference` (see
    contextsim.analysis.estimator_report.compare_text) at its revision, and whether it
    is stored: when it is not (or lacks an estimator added since), it is computed here
    and kept in the store's cache, and the caller may queue the job that stores it
    (webapp.tasks.store_report). Writes nothing."""
    found = (
        EstimatorReport.objects.filter(run=run, reference=reference, revision=run.revision)
        .values_list("data", flat=True)
        .first()
    )
    if found is not None and set(ESTIMATORS) <= set(found["total"]):
        return found, True
    key = (run.public_id, reference, run.revision)
    data = CACHE.report(key)
    if data is None:
        data = report_of(run, reference)
        CACHE.keep_report(key, data)
    return data, False


def report_of(run: Run, reference: str) -> dict[str, Any]:
    """The comparison by script of the run's stored text, computed now."""
    return compare_text(run_text(stored_run(run)), reference)
