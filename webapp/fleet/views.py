"""A collection's page: all its runs simulated under one set of controls (the fleet of
a session and its subagents), with totals, a chart and a row per run."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from contextsim.registry import POLICIES
from webapp.dashboard import state as viewstate
from webapp.dashboard.views import push_canonical
from webapp.estimators import reads as estimators
from webapp.fleet.charts import fleet_figure
from webapp.fleet.reads import analyse_fleet, frontier
from webapp.http import HtmxHttpRequest
from webapp.runs import reads as runs
from webapp.runs import sessions
from webapp.sweeps.frontier import frontier_figures


@require_GET
def collection(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    found, members = runs.get_collection(request.user, public_id)
    choices = estimators.estimators_for(request.user)
    # The main run's model decides the defaults (its subagents run on its window).
    defaults = viewstate.defaults_for(members[0].model, members[0].context_window)
    tree = sessions.session_tree(request.user, members)
    context: dict[str, object] = {
        "collection": found,
        "runs": members,
        "tree": tree,
        "policies": POLICIES,
        "estimators": choices,
        "form": viewstate.form_values(request.GET, defaults),
        "can_sweep": request.user.is_authenticated,
    }
    status = 200
    try:
        state = viewstate.read_state(request.GET, choices, defaults)
    except viewstate.BadQuery as exc:
        context["error"], status = str(exc), 400
    else:
        fleet = analyse_fleet(members, state, choices)
        if request.GET.get("frontier"):  # asked for in the page, not loaded by htmx
            configs, totals = frontier(members, state, choices)
            context["frontiers"] = frontier_figures(configs, totals, len(members))
        context.update(
            {
                "state": state,
                "fleet": fleet,
                "figure": fleet_figure(fleet, state, sessions.start_steps(tree)),
                "params": viewstate.param_controls(state),
                "permalink": state.query(),
            }
        )
    template = "collection.html#fleet-response" if request.htmx else "collection.html"
    response = render(request, template, context, status=status)
    if request.htmx and status == 200:
        push_canonical(request, response, str(context["permalink"]))
    return response


@require_GET
def collection_frontier(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    """The collection's frontier under the query's settings, for htmx (loaded when
    scrolled to: it simulates every run at several budgets); the page's link asks the
    collection page for it (`frontier=1`)."""
    found, members = runs.get_collection(request.user, public_id)
    choices = estimators.estimators_for(request.user)
    defaults = viewstate.defaults_for(members[0].model, members[0].context_window)
    try:
        state = viewstate.read_state(request.GET, choices, defaults)
    except viewstate.BadQuery as exc:
        return render(request, "collection.html#frontier", {"error": str(exc)}, status=400)
    configs, totals = frontier(members, state, choices)
    context = {
        "collection": found,
        "state": state,
        "frontiers": frontier_figures(configs, totals, len(members)),
    }
    return render(request, "collection.html#frontier", context)
