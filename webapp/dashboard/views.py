"""The run dashboard and what hangs off it: the live line, the ledger, the step
inspector, one message's full text and the exports. HTTP only: the simulations are in
webapp.dashboard.analysis, the rows and items in webapp.dashboard.trace."""

from __future__ import annotations

import csv
from dataclasses import replace

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django_htmx.http import push_url, trigger_client_event

from contextsim.analysis.problems import KINDS as PROBLEM_KINDS
from contextsim.analysis.report import simulation_summary
from contextsim.engine.simulate import REPLAY
from contextsim.registry import POLICIES
from webapp.access import grants as share_grants
from webapp.dashboard import agent_config, analysis, trace
from webapp.dashboard import state as viewstate
from webapp.dashboard.charts.ledger import ledger_figure
from webapp.estimators import reads as estimators
from webapp.ingest.proxy import reads as captures
from webapp.models import Run
from webapp.runs import reads as runs
from webapp.runs import sessions

PROBLEMS = 50
"""Problems listed at once; the filter by kind reaches the others."""


def _context(request: HttpRequest, public_id: str) -> tuple[dict[str, object], int]:
    run = runs.get_run(request.user, public_id, share_grants.held(request))
    owner = request.user.is_authenticated and run.owner_id == request.user.pk
    base: dict[str, object] = {
        "run": run,
        "is_owner": owner,
        "can_sweep": request.user.is_authenticated and (owner or run.visibility == "public"),
        "policies": POLICIES,
        "query": request.GET,
        "siblings": runs.siblings(request.user, run),
        "started_by": sessions.started_by(request.user, run),
        "timed": runs.has_times(run),
    }
    base["live"] = runs.is_live(run)
    base["counting_done"] = runs.counting_done(run)
    defaults = viewstate.defaults_for(run.model, run.context_window)
    base["form"] = viewstate.form_values(request.GET, defaults)
    base["defaults"] = defaults
    choices = estimators.estimators_for(request.user)
    base["estimators"] = choices
    base["lenders"] = runs.lenders(request.user, run)
    try:
        state = viewstate.read_state(request.GET, choices, defaults)
        lender = _lender(request, state.borrow)
        result = analysis.analyse(run, state, choices, lender)
    except viewstate.BadQuery as exc:
        return {**base, "error": str(exc)}, 400
    return {**base, "state": state, "result": result}, 200


def _lender(request: HttpRequest, public_id: str) -> Run | None:
    """The run whose fit is borrowed, if the person may see it."""
    if not public_id:
        return None
    try:
        return runs.get_run(request.user, public_id, share_grants.held(request))
    except Http404:
        raise viewstate.BadQuery(f"borrow: no run {public_id!r} that you can see") from None


@require_GET
def run_dashboard(request: HttpRequest, public_id: str) -> HttpResponse:
    context, status = _context(request, public_id)
    if status == 200:
        result = context["result"]
        state = context["state"]
        assert isinstance(result, analysis.Analysis) and isinstance(state, viewstate.ViewState)
        kind = request.GET.get("problem", "")
        pages = -(-len(result.main.records) // trace.PAGE)
        page = min(max(_int(request.GET.get("page"), 1), 1), max(pages, 1))
        context.update(
            {
                "summary": simulation_summary(result.main, result.problems, False),
                "other_summary": simulation_summary(result.other, [], False)
                if result.other
                else None,
                "baseline_summary": simulation_summary(result.baseline, [], False)
                if result.baseline
                else None,
                "figure": analysis.figure(result, context["run"]),
                "problems": [p for p in result.problems if not kind or p.kind == kind][:PROBLEMS],
                "problem_kind": kind,
                "problem_kinds": [
                    k for k in PROBLEM_KINDS if any(p.kind == k for p in result.problems)
                ],
                "rows": trace.trace_rows(
                    context["run"],
                    result.main,
                    result.problems,
                    page - 1,
                    result.other,
                    sessions.subagent_prompts(request.user, context["run"]),
                ),
                "page": page,
                "pages": pages,
                "params": viewstate.param_controls(state),
                "snippets": agent_config.snippets(context["run"], state),
                "permalink": state.query(),
                "baseline_query": replace(
                    state, policy=REPLAY, params=POLICIES[REPLAY].Params()
                ).query(),
            }
        )
    template = "dashboard/run.html#analysis-response" if request.htmx else "dashboard/run.html"
    response = render(request, template, context, status=status)
    if request.htmx and status == 200:
        push_canonical(request, response, str(context["permalink"]))
    return response


def push_canonical(request: HttpRequest, response: HttpResponse, query: str) -> None:
    """Have htmx push the canonical URL of the view (defaults left out), not the raw
    form fields."""
    push_url(response, request.path + (f"?{query}" if query else ""))


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw or default)
    except ValueError:
        return default


@require_GET
def step_inspector(request: HttpRequest, public_id: str, step: int) -> HttpResponse:
    context, status = _context(request, public_id)
    if status == 200:
        result = context["result"]
        assert isinstance(result, analysis.Analysis)
        steps = len(result.main.records)
        if not 0 <= step < steps:
            context = {
                **context,
                "error": f"step {step} does not exist: this run has {steps} requests "
                f"(0 to {steps - 1})",
            }
            status = 404
        else:
            start = _int(request.GET.get("from"), 0)
            context.update(analysis.inspector_context(context["run"], result, step, start))
            context["timing"] = trace.step_timing(context["run"], result.main, step)
            context["captured"] = captures.calls_of(context["run"], step)
            context["spawned"] = sessions.spawned_by_message(
                request.user, context["run"], context["items"], context["response_index"]
            )
    return render(request, "dashboard/step.html", context, status=status)


@require_GET
def message_text(request: HttpRequest, public_id: str, index: int) -> HttpResponse:
    run = runs.get_run(request.user, public_id, share_grants.held(request))
    message = runs.get_message(run, index)
    return render(
        request, "dashboard/step.html#message-full", {"text": trace.message_text(message.parts)}
    )


@require_GET
def export_records(request: HttpRequest, public_id: str, kind: str) -> HttpResponse:
    if kind not in ("csv", "json"):
        raise Http404("exports are csv or json")
    context, status = _context(request, public_id)
    if status != 200:
        return JsonResponse({"error": context["error"]}, status=status)
    result = context["result"]
    assert isinstance(result, analysis.Analysis)
    name = f"contextsim-{public_id}-{result.state.policy}"
    if kind == "json":
        response = HttpResponse(
            trace.records_json(result.main, result.problems), content_type="application/json"
        )
    else:
        response = HttpResponse(content_type="text/csv")
        csv.writer(response).writerows(trace.records_csv_rows(result.main))
    response["Content-Disposition"] = f'attachment; filename="{name}.{kind}"'
    return response


@require_GET
def ledger(request: HttpRequest, public_id: str) -> HttpResponse:
    context, status = _context(request, public_id)
    if status == 200:
        result = context["result"]
        assert isinstance(result, analysis.Analysis)
        context["ledger"] = ledger_figure(result.main)
        context["permalink"] = result.state.query()
        context["params"] = [
            p for p in viewstate.param_controls(result.state) if p["value"] != p["default"]
        ]
    template = "dashboard/ledger.html#ledger" if request.htmx else "dashboard/ledger.html"
    return render(request, template, context, status=status)


@require_GET
def run_live(request: HttpRequest, public_id: str) -> HttpResponse:
    """Polled while a run is live: nothing (204) while it has not changed since
    `revision`; else the live line again with an `HX-Trigger` that makes the controls
    redraw the analysis; once the run has stopped growing, a line that stops polling."""
    run = runs.get_run(request.user, public_id, share_grants.held(request))
    live = runs.is_live(run)
    if live and str(run.revision) == request.GET.get("revision"):
        return HttpResponse(status=204)
    response = render(request, "dashboard/run.html#live", {"run": run, "live": live})
    if str(run.revision) != request.GET.get("revision"):
        trigger_client_event(response, "contextsim:grew")
    return response
