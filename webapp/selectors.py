"""Selectors read: every query the views need, with visibility rules applied."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet
from django.http import Http404, QueryDict
from django.utils import timezone

from contextsim.estimators import ESTIMATORS, Estimator
from contextsim.model import request_bounds
from webapp.models import (
    Collection,
    CustomRates,
    ImportJob,
    Message,
    Run,
    ShareLink,
    Visibility,
)


def visible_runs(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Run]:
    """Public runs and the user's own."""
    rule = Q(visibility=Visibility.PUBLIC)
    if user.is_authenticated:
        rule |= Q(owner=user)
    return Run.objects.filter(rule)


def search_runs(
    user: AbstractBaseUser | AnonymousUser, query: str = "", format: str = ""
) -> QuerySet[Run]:
    runs = visible_runs(user)
    if query:
        runs = runs.filter(
            Q(title__icontains=query) | Q(model__icontains=query) | Q(session_id__icontains=query)
        )
    if format:
        runs = runs.filter(format=format)
    return runs.select_related("collection")


def run_formats(user: AbstractBaseUser | AnonymousUser) -> list[str]:
    return sorted(set(visible_runs(user).values_list("format", flat=True)))


def get_run(
    user: AbstractBaseUser | AnonymousUser, public_id: str, shares: Sequence[str] = ()
) -> Run:
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


def siblings(user: AbstractBaseUser | AnonymousUser, run: Run) -> list[Run]:
    """The runs of `run`'s collection this user may see, main run first; empty when it
    is the only one (a run shared alone shows nothing of its collection)."""
    if run.collection is None:
        return []
    found = list(visible_runs(user).filter(collection=run.collection).order_by("subagent", "id"))
    if not any(r.pk == run.pk for r in found):
        found = sorted([*found, run], key=lambda r: (r.subagent, r.pk))
    return found if len(found) > 1 else []


def get_owned_run(user: AbstractBaseUser | AnonymousUser, public_id: str) -> Run:
    """The run if the user owns it (to share it); else 404."""
    run = Run.objects.filter(public_id=public_id, owner_id=user.pk).first()
    if run is None or not user.is_authenticated:
        raise Http404("no such run")
    return run


def active_share(token: str) -> ShareLink:
    link = ShareLink.objects.select_related("run").filter(token=token, revoked__isnull=True)
    found = link.first()
    if found is None:
        raise Http404("this share link does not exist or was revoked")
    return found


def get_collection(
    user: AbstractBaseUser | AnonymousUser, public_id: str
) -> tuple[Collection, list[Run]]:
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


def get_job(user: AbstractBaseUser | AnonymousUser, public_id: str) -> ImportJob:
    job = ImportJob.objects.select_related("upload").filter(public_id=public_id).first()
    if job is None or (job.upload.owner_id is not None and job.upload.owner_id != user.pk):
        raise Http404("no such import")
    return job


@dataclass(frozen=True, slots=True)
class RequestRow:
    """One request of a run: its history size and token figures."""

    step: int
    history: int
    estimates: dict[str, int]
    measured: int | None
    response_kind: str
    tools: str


def request_rows(run: Run) -> list[RequestRow]:
    """Per request: the estimated tokens of its history by every estimator (sums of the
    counts stored at import) beside the measured context when the log has it."""
    rows = list(
        Message.objects.filter(run=run)
        .order_by("index")
        .values_list(
            "role",
            "kind",
            "counts",
            "usage_input",
            "usage_cache_read",
            "usage_cache_write",
            "tool_names",
        )
    )
    totals = {name: [0] for name in ESTIMATORS}
    for row in rows:
        for name, sums in totals.items():
            sums.append(sums[-1] + int(row[2].get(name, 0)))
    out = []
    for k, (end, response) in enumerate(request_bounds([r[0] for r in rows])):
        measured = None
        kind, tools = "pending", ""
        if response is not None:
            _, kind, _, u_in, u_read, u_write, tools = rows[response]
            if u_in is not None:
                measured = u_in + (u_read or 0) + (u_write or 0)
        estimates = {name: sums[end] for name, sums in totals.items()}
        out.append(RequestRow(k, end, estimates, measured, kind, tools))
    return out


def get_message(run: Run, index: int) -> Message:
    message = Message.objects.filter(run=run, index=index).first()
    if message is None:
        raise Http404("no such message")
    return message


def estimators_for(user: AbstractBaseUser | AnonymousUser) -> dict[str, Estimator]:
    """The registered estimators and the user's own fitted ones, by name."""
    from webapp.services.custom_estimators import as_estimator

    found: dict[str, Estimator] = dict(ESTIMATORS)
    if user.is_authenticated:
        for row in CustomRates.objects.filter(owner=user).order_by("created"):
            found[row.estimator_name] = as_estimator(row)
    return found


def custom_rates(user: AbstractBaseUser | AnonymousUser) -> list[CustomRates]:
    if not user.is_authenticated:
        return []
    return list(CustomRates.objects.filter(owner=user).order_by("-created"))


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
