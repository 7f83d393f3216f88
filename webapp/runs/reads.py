"""Reading runs: the ones a user may see, one run, its collection and siblings, its
messages and import jobs, with the visibility rules applied (another's private run is
a 404, never a 403)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet
from django.http import Http404, QueryDict
from django.utils import timezone

from webapp.models import (
    Collection,
    ImportJob,
    Message,
    Run,
    Tag,
    Visibility,
)


def visible_runs(user: User | AnonymousUser) -> QuerySet[Run]:
    """Public runs and the user's own."""
    rule = Q(visibility=Visibility.PUBLIC)
    if user.is_authenticated:
        rule |= Q(owner=user)
    return Run.objects.filter(rule)


def captured_session(user: User | AnonymousUser, name: str) -> Run | None:
    """The user's run of the captured session `name` (`contextsim run --name`, the
    proxy's `/proxy/s/<name>/`): its main run, the one that began it, else None while
    no call of it has come."""
    if not user.is_authenticated or not name:
        return None
    found = Run.objects.filter(owner=user, format="capture", session_id=name)
    return found.order_by("subagent", "id").first()


def search_runs(
    user: User | AnonymousUser, query: str = "", format: str = "", tag: str = ""
) -> QuerySet[Run]:
    """The runs this person may see whose title, model or session id (its own or its
    parent's) holds `query`, of `format`, and tagged `tag` by them."""
    runs = visible_runs(user)
    if query:
        runs = runs.filter(
            Q(title__icontains=query)
            | Q(model__icontains=query)
            | Q(session_id__icontains=query)
            | Q(parent_session_id__icontains=query)
        )
    if format:
        runs = runs.filter(format=format)
    if tag:
        runs = (
            runs.filter(tags__name=tag, tags__owner_id=user.pk)
            if user.is_authenticated
            else runs.none()
        )
    return runs.select_related("collection").prefetch_related("tags")


def user_tags(user: User | AnonymousUser) -> list[str]:
    """The tags this person has given runs, by name."""
    if not user.is_authenticated:
        return []
    return list(Tag.objects.filter(owner_id=user.pk).values_list("name", flat=True))


def run_formats(user: User | AnonymousUser) -> list[str]:
    return sorted(set(visible_runs(user).values_list("format", flat=True)))


def get_run(user: User | AnonymousUser, public_id: str, shares: Sequence[str] = ()) -> Run:
    """The run, if the user may see it (public, their own, or shared with them by one of
    the share tokens they hold that is not revoked); else 404 (never 403: ids of
    private runs stay secret)."""
    runs = visible_runs(user).filter(public_id=public_id)
    if shares:
        runs = runs | Run.objects.filter(
            public_id=public_id, shares__token__in=shares, shares__revoked__isnull=True
        )
    run = runs.select_related("collection").first()
    if run is None:
        raise Http404("no such run")
    return run


LIVE_FOR = timedelta(minutes=10)
"""A run that changed this recently is followed by its open dashboards."""


def is_live(run: Run) -> bool:
    return run.last_append is not None and timezone.now() - run.last_append < LIVE_FOR


def counting_done(run: Run) -> int | None:
    """How far, in percent of the upload's messages, its import's slow counts are
    (None when nothing is being counted for the run)."""
    if not run.counting or run.upload_id is None:
        return None
    job = ImportJob.objects.filter(upload_id=run.upload_id, stage="counting").first()
    if job is None or not job.messages_total:
        return 0
    return min(100, 100 * job.messages_written // job.messages_total)


def siblings(user: User | AnonymousUser, run: Run) -> list[Run]:
    """The runs of `run`'s collection this user may see, main run first; empty when it
    is the only one (a run shared alone shows nothing of its collection)."""
    if run.collection is None:
        return []
    found = list(visible_runs(user).filter(collection=run.collection).order_by("subagent", "id"))
    if not any(r.pk == run.pk for r in found):
        found = sorted([*found, run], key=lambda r: (r.subagent, r.pk))
    return found if len(found) > 1 else []


def get_owned_run(user: User | AnonymousUser, public_id: str) -> Run:
    """The run if the user owns it (to share it); else 404."""
    run = Run.objects.filter(public_id=public_id, owner_id=user.pk).first()
    if run is None or not user.is_authenticated:
        raise Http404("no such run")
    return run


def get_collection(user: User | AnonymousUser, public_id: str) -> tuple[Collection, list[Run]]:
    """A collection the user may see and its runs that they may see (main run first);
    else 404."""
    rule = Q(visibility=Visibility.PUBLIC)
    if user.is_authenticated:
        rule |= Q(owner=user)
    collection = Collection.objects.filter(rule, public_id=public_id).first()
    runs = list(
        visible_runs(user).filter(collection=collection).order_by("subagent", "id")
        if collection
        else []
    )
    if collection is None or not runs:
        raise Http404("no such collection")
    return collection, runs


def get_job(user: User | AnonymousUser, public_id: str) -> ImportJob:
    job = ImportJob.objects.select_related("upload").filter(public_id=public_id).first()
    if job is None or (job.upload.owner_id is not None and job.upload.owner_id != user.pk):
        raise Http404("no such import")
    return job


def get_message(run: Run, index: int) -> Message:
    message = Message.objects.filter(run=run, index=index).first()
    if message is None:
        raise Http404("no such message")
    return message


def preselected_runs(runs: list[Run], query: QueryDict) -> list[str]:
    """Public ids of the runs a link asked for: `?run=<id>` (repeatable) or
    `?collection=<id>` (its runs)."""
    wanted = set(query.getlist("run"))
    collection = query.get("collection", "")
    return [
        r.public_id
        for r in runs
        if r.public_id in wanted
        or (collection and r.collection and r.collection.public_id == collection)
    ]


def run_groups(runs: list[Run]) -> list[tuple[str, list[Run]]]:
    """Runs grouped by collection (in the order given), runs outside any last."""
    groups: dict[int | None, tuple[str, list[Run]]] = {}
    for run in runs:
        label = run.collection.title if run.collection else "Other runs"
        groups.setdefault(run.collection_id, (label, []))[1].append(run)
    loose = groups.pop(None, None)
    return [*groups.values(), *([loose] if loose else [])]


def lenders(user: User | AnonymousUser, run: Run) -> list[Run]:
    """Runs of the same model the user may see whose usage was measured (at most 30,
    the most measured requests first): a run without usage can borrow their
    reconciliation. A compaction request is no lender: its one request is a summary
    prompt, not the agent's, and fits nothing else."""
    if not run.model:
        return []
    found = visible_runs(user).filter(
        model=run.model, requests_with_usage__gte=1, compaction_request=False
    )
    return list(found.exclude(pk=run.pk).order_by("-requests_with_usage", "-created")[:30])


def has_times(run: Run) -> bool:
    """Whether the run's log gave its messages times."""
    return Message.objects.filter(run=run, timestamp__isnull=False).exists()
