"""Sweeps: the list, the form that starts one, and its page (progress while workers
compute the cells, then totals, charts and the run x configuration grid). HTTP only:
the work is in webapp.sweeps.services and webapp.sweeps.reads."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRefresh

from webapp import tasks
from webapp.estimators import reads as estimators
from webapp.http import SignedInRequest
from webapp.runs import reads as runs
from webapp.sweeps import reads as sweep_selectors
from webapp.sweeps import services as sweeps
from webapp.sweeps.charts import sweep_figures
from webapp.sweeps.forms import SweepForm, suggested_grid
from webapp.sweeps.frontier import frontier_figures


@login_required
@require_GET
def sweeps_list(request: SignedInRequest) -> HttpResponse:
    return render(
        request, "sweeps/list.html", {"sweeps": sweep_selectors.sweep_list(request.user)[:200]}
    )


@login_required
@require_http_methods(["GET", "POST"])
def new_sweep(request: SignedInRequest) -> HttpResponse:
    found = list(runs.search_runs(request.user).order_by("collection_id", "subagent", "id"))
    names = list(estimators.estimators_for(request.user))
    choices = [(r.public_id, r.title) for r in found]
    if request.method == "POST":
        form = SweepForm(request.POST, runs=choices, estimators=names)
        if form.is_valid():
            data = form.cleaned_data
            chosen = [r for r in found if r.public_id in set(data["runs"])]
            try:
                sweep = sweeps.create_sweep(
                    request.user,
                    chosen,
                    data["configs"],
                    estimator=data["estimator"],
                    hard_limit=data["hard_limit"],
                    title=data["title"],
                )
            except ValueError as exc:
                form.add_error(None, str(exc))
            else:
                tasks.queue_sweep(sweep)
                return redirect("sweep", sweep.public_id)
        status = 400
    else:
        chosen_ids = runs.preselected_runs(found, request.GET)
        initial = {
            "runs": chosen_ids,
            **suggested_grid([r for r in found if r.public_id in set(chosen_ids)]),
        }
        form = SweepForm(initial=initial, runs=choices, estimators=names)
        status = 200
    groups = runs.run_groups(found)
    return render(request, "sweeps/new.html", {"form": form, "groups": groups}, status=status)


@login_required
@require_GET
def sweep_detail(request: SignedInRequest, public_id: str) -> HttpResponse:
    """While cells are open the page polls a small progress line; once they are all
    done that poll reloads the page, which then shows the charts and tables."""
    sweep = sweep_selectors.get_sweep(request.user, public_id)
    progress = sweep_selectors.sweep_progress(sweep)
    if request.htmx:
        response = render(
            request, "sweeps/detail.html#progress", {"sweep": sweep, "progress": progress}
        )
        return HttpResponseClientRefresh() if progress.finished else response
    run_count = sweep.runs.count()
    context: dict[str, object] = {"sweep": sweep, "progress": progress, "run_count": run_count}
    if progress.finished:
        view = sweep_selectors.sweep_view(sweep)
        figures = sweep_figures(view.configs, view.totals, sweep.hard_limit)
        frontiers = frontier_figures(view.configs, view.totals, run_count)
        context.update({"view": view, "figures": figures, "frontiers": frontiers})
    return render(request, "sweeps/detail.html", context)
