"""Sweeps: the list, the form that starts one, and its page (progress while workers
compute the cells, then totals, charts and the run x configuration grid). HTTP only:
the work is in webapp.services.sweeps and webapp.selectors."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from webapp import selectors, selectors_sweeps
from webapp.forms import SweepForm
from webapp.services import sweeps
from webapp.sweep_charts import sweep_figures


@login_required
@require_GET
def sweeps_list(request: HttpRequest) -> HttpResponse:
    return render(
        request, "sweeps.html", {"sweeps": selectors_sweeps.sweep_list(request.user)[:200]}
    )


@login_required
@require_http_methods(["GET", "POST"])
def new_sweep(request: HttpRequest) -> HttpResponse:
    runs = list(selectors.search_runs(request.user).order_by("collection_id", "subagent", "id"))
    estimators = list(selectors.estimators_for(request.user))
    choices = [(r.public_id, r.title) for r in runs]
    if request.method == "POST":
        form = SweepForm(request.POST, runs=choices, estimators=estimators)
        if form.is_valid():
            data = form.cleaned_data
            chosen = [r for r in runs if r.public_id in set(data["runs"])]
            sweep = sweeps.create_sweep(
                request.user,  # type: ignore[arg-type]
                chosen,
                data["configs"],
                estimator=data["estimator"],
                hard_limit=data["hard_limit"],
                title=data["title"],
            )
            return redirect("sweep", sweep.public_id)
        status = 400
    else:
        initial = {"runs": selectors.preselected_runs(runs, request.GET)}
        form = SweepForm(initial=initial, runs=choices, estimators=estimators)
        status = 200
    groups = selectors.run_groups(runs)
    return render(request, "sweep_new.html", {"form": form, "groups": groups}, status=status)


@login_required
@require_GET
def sweep_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    """While cells are open the page polls a small progress line; once they are all
    done that poll reloads the page, which then shows the charts and tables."""
    sweep = selectors_sweeps.get_sweep(request.user, public_id)
    progress = selectors_sweeps.sweep_progress(sweep)
    if request.htmx:
        response = render(request, "sweep.html#progress", {"sweep": sweep, "progress": progress})
        if progress.finished:
            response["HX-Refresh"] = "true"
        return response
    context: dict[str, object] = {
        "sweep": sweep,
        "progress": progress,
        "run_count": sweep.runs.count(),
    }
    if progress.finished:
        view = selectors_sweeps.sweep_view(sweep)
        figures = sweep_figures(view.configs, view.totals, sweep.hard_limit)
        context.update({"view": view, "figures": figures})
    return render(request, "sweep.html", context)
