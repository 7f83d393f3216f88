"""A collection's page: all its runs simulated under one set of controls (the fleet of
a session and its subagents), with totals, a chart and a row per run."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from contextsim.policies import POLICIES
from webapp import analysis, selectors
from webapp.fleet import analyse_fleet, fleet_figure
from webapp.views_dashboard import push_canonical


@require_GET
def collection(request: HttpRequest, public_id: str) -> HttpResponse:
    found, runs = selectors.get_collection(request.user, public_id)
    estimators = selectors.estimators_for(request.user)
    context: dict[str, object] = {
        "collection": found,
        "runs": runs,
        "policies": POLICIES,
        "estimators": estimators,
        "form": analysis.form_values(request.GET),
        "can_sweep": request.user.is_authenticated,
    }
    status = 200
    try:
        state = analysis.read_state(request.GET, estimators)
    except analysis.BadQuery as exc:
        context["error"], status = str(exc), 400
    else:
        fleet = analyse_fleet(runs, state, estimators)
        context.update(
            {
                "state": state,
                "fleet": fleet,
                "figure": fleet_figure(fleet, state),
                "params": analysis.param_controls(state),
                "permalink": state.query(),
            }
        )
    template = "collection.html#fleet-response" if request.htmx else "collection.html"
    response = render(request, template, context, status=status)
    if request.htmx and status == 200:
        push_canonical(request, response, str(context["permalink"]))
    return response
