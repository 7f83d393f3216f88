"""Building a stored run's skeleton for an estimator that has none yet (runs imported
before skeletons were stored, or an estimator added later): read the messages back
into a core run once, count, and keep the result."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from contextsim import model as core
from contextsim import skeleton
from contextsim.estimators import Estimator, seed_counts
from contextsim.formats.native import parse_message
from webapp.models import Message, Run, RunSkeleton


def stored_run(run: Run) -> core.Run:
    """The core run of a stored run (text included)."""
    messages = []
    for index, role, parts, summary, u_in, u_read, u_write, u_out in (
        Message.objects.filter(run=run)
        .order_by("index")
        .values_list(
            "index",
            "role",
            "parts",
            "compact_summary",
            "usage_input",
            "usage_cache_read",
            "usage_cache_write",
            "usage_output",
        )
    ):
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
        data = {"role": role, "content": parts, "usage": usage, "compact_summary": summary}
        messages.append(parse_message(run.title, f"message {index}", data))
    compactions = tuple(
        core.Compaction(c["before_message"], c.get("pre_tokens"), c.get("trigger", ""))
        for c in run.compactions
    )
    return core.Run(
        title=run.title,
        messages=tuple(messages),
        format=run.format,
        model=run.model,
        session_id=run.session_id,
        parent_session_id=run.parent_session_id,
        subagent=run.subagent,
        compactions=compactions,
    )


def build_skeleton(run: Run, estimator: str, counter: Estimator) -> dict[str, object]:
    """Build, store and return the skeleton data of `run` under `estimator` (whose
    counting is `counter`). Messages counted at import are not tokenized again.

    A run that changed while it was read (a live run's append) keeps no skeleton: what
    was built is returned but not stored under the newer revision."""
    revision = Run.objects.values_list("revision", flat=True).get(pk=run.pk)
    known = Message.objects.filter(run=run).values_list("content_hash", "counts")
    seed_counts((estimator, key, counts[estimator]) for key, counts in known if estimator in counts)
    data = skeleton.to_dict(skeleton.build(stored_run(run), counter))
    try:
        with transaction.atomic():
            if Run.objects.filter(pk=run.pk, revision=revision).exists():
                stale = RunSkeleton.objects.filter(run=run, estimator=estimator)
                stale.exclude(revision=revision).delete()
                RunSkeleton.objects.create(
                    run=run, estimator=estimator, data=data, revision=revision
                )
    except IntegrityError:
        pass  # another request built it at the same time
    return data
