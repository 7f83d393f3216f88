"""Selectors read: every query the views need, with visibility rules applied."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet
from django.http import Http404

from contextsim.estimators import ESTIMATORS, Estimator
from contextsim.model import request_bounds
from webapp.models import CustomRates, ImportJob, Message, Run, Visibility


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


def get_run(user: AbstractBaseUser | AnonymousUser, public_id: str) -> Run:
    """The run, if the user may see it; else 404 (never 403: ids of private runs stay
    secret)."""
    run = visible_runs(user).select_related("collection").filter(public_id=public_id).first()
    if run is None:
        raise Http404("no such run")
    return run


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
