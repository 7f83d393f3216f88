"""Storing where a run's context went (contextsim.analysis.context_shares), by jobs only:
computed as the run's dashboard shows it by default (its window, the default estimator,
as_logged, reconciled with its usage, tools' definitions split between them), so the
overview's sums across runs are the sums of what each run's page says."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.http import QueryDict

from contextsim.analysis import context_shares as shares
from webapp.dashboard.analysis import analyse, tool_parts
from webapp.dashboard.state import defaults_for, read_state
from webapp.models import Run, RunShares
from webapp.overview.usage import run_days


def run_shares(run: Run) -> shares.ContextShares:
    """The run's shares as its dashboard's default view computes them; writes nothing.
    Raises what the analysis raises for a run it cannot simulate (BadQuery)."""
    state = read_state(QueryDict(), defaults=defaults_for(run.model, run.context_window))
    result = analyse(run, state, alone=True)
    tools, _ = tool_parts(result, None, run)
    return shares.context_shares(result.main, tools)


def do_store_shares(run: Run) -> None:
    """Compute and store the run's shares at its revision, and its measured usage by
    day and model (webapp.overview.usage.run_days: what the overview adds up); a run
    changed meanwhile keeps its new revision's to a later derivation (nothing of the
    old is stored)."""
    revision = run.revision
    data = {**run_shares(run).to_dict(), "days": run_days(run)}
    with transaction.atomic():
        if Run.all_objects.filter(pk=run.pk, revision=revision).exists():
            RunShares.objects.update_or_create(
                run=run, defaults={"data": data, "revision": revision}
            )


def stale() -> Q:
    """Runs whose stored shares are missing or not of their revision and layout."""
    current = Q(
        context_shares__revision=F("revision"),
        context_shares__data__layout=shares.LAYOUT,
    )
    return Q(context_shares__isnull=True) | ~current


def without_shares(runs: QuerySet[Run]) -> QuerySet[Run]:
    """Those of `runs` whose current shares are not stored."""
    return runs.filter(stale())
