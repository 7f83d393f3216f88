"""The run dashboard and what hangs off it: the live line, the ledger, the step
inspector, one message's full text and the exports. HTTP only: the simulations are in
webapp.dashboard.analysis, the rows and items in webapp.dashboard.trace."""

from __future__ import annotations

import csv
from dataclasses import replace

from django.http import Http404, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django_htmx.http import push_url, trigger_client_event

from contextsim.analysis.problems import KINDS as PROBLEM_KINDS
from contextsim.analysis.report import simulation_summary
from contextsim.engine.policy import changed_params
from contextsim.engine.simulate import REPLAY
from contextsim.registry import POLICIES, own_trigger
from webapp.access import grants as share_grants
from webapp.access import reads as share_reads
from webapp.dashboard import agent_config, analysis, deferring, trace
from webapp.dashboard import state as viewstate
from webapp.dashboard.analysis import Analysis
from webapp.dashboard.charts.ledger import ledger_figure
from webapp.dashboard.page import Dashboard, Frame, context
from webapp.estimators import reads as estimators
from webapp.http import HtmxHttpRequest
from webapp.ingest.proxy import reads as captures
from webapp.models import Run
from webapp.runs import reads as runs
from webapp.runs import sessions

PROBLEMS = 50
"""Problems listed at once; the filter by kind reaches the others."""


def _frame(request: HtmxHttpRequest, public_id: str) -> Frame:
    run = runs.get_run(request.user, public_id, share_grants.held(request))
    owner = request.user.is_authenticated and run.owner_id == request.user.pk
    defaults = viewstate.defaults_for(run.model, run.context_window)
    return Frame(
        run=run,
        is_owner=owner,
        can_sweep=request.user.is_authenticated and (owner or run.visibility == "public"),
        policies=POLICIES,
        query=request.GET,
        siblings=runs.siblings(request.user, run),
        started_by=sessions.started_by(request.user, run),
        timed=runs.has_times(run),
        live=runs.is_live(run),
        counting_done=runs.counting_done(run),
        form=viewstate.form_values(request.GET, defaults),
        defaults=defaults,
        estimators=estimators.estimators_for(request.user),
        lenders=runs.lenders(request.user, run),
        share_token=share_reads.share_token(run) if owner and run.visibility != "public" else "",
    )


def _analysed(
    request: HtmxHttpRequest,
    frame: Frame,
    *,
    alone: bool = False,
    query: QueryDict | None = None,
) -> Analysis:
    """The analysis the query (the request's unless given) asks for (the state's
    policy `alone`, for a page that shows nothing else); raises viewstate.BadQuery
    naming what is wrong."""
    query = request.GET if query is None else query
    state = viewstate.read_state(query, frame.estimators, frame.defaults)
    lender = _lender(request, state.borrow)
    return analysis.analyse(frame.run, state, frame.estimators, lender, alone=alone)


def _leniently(
    request: HtmxHttpRequest, frame: Frame, error: viewstate.BadQuery
) -> tuple[Analysis, dict[str, str]] | None:
    """The analysis with each policy parameter the query got wrong left at its
    default, and the tools to defer left out when they are what is wrong, and what
    was wrong with each (shown on its control); None when what is wrong is none of
    these."""
    query = request.GET.copy()
    errors: dict[str, str] = {}
    policy = query.get("policy", "")
    while True:
        listed = next((k for k in ("defer", "remove") if str(error).startswith(f"{k}: ")), "")
        field = listed or viewstate.param_of(policy, str(error))
        if not field or field not in query or field in errors:
            return None
        errors[field] = str(error).removeprefix(f"{listed}: " if listed else f"{policy}: ")
        del query[field]
        try:
            return _analysed(request, frame, query=query), errors
        except viewstate.BadQuery as again:
            error = again


def _lender(request: HtmxHttpRequest, public_id: str) -> Run | None:
    """The run whose fit is borrowed, if the person may see it."""
    if not public_id:
        return None
    try:
        return runs.get_run(request.user, public_id, share_grants.held(request))
    except Http404:
        raise viewstate.BadQuery(f"borrow: no run {public_id!r} that you can see") from None


@require_GET
def run_dashboard(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    frame = _frame(request, public_id)
    errors: dict[str, str] = {}
    try:
        result = _analysed(request, frame)
    except viewstate.BadQuery as exc:
        lenient = _leniently(request, frame, exc)
        if lenient is None:
            return render(
                request, _template(request), {**context(frame), "error": str(exc)}, status=400
            )
        result, errors = lenient
    state = result.state
    kind = request.GET.get("problem", "")
    pages = -(-len(result.main.records) // trace.PAGE)
    page = min(max(_int(request.GET.get("page"), 1), 1), max(pages, 1))
    run = frame.run
    sort = request.GET.get("sort", "step")
    sort = sort if sort in trace.SORTS else "step"
    descending = request.GET.get("dir", "asc" if sort == "step" else "desc") == "desc"
    listed = [p for p in result.problems if not kind or p.kind == kind]
    if request.GET.get("problems") == "step":
        listed.sort(key=lambda p: p.step)
    tools, servers = analysis.tool_parts(result, run=frame.run)
    shown = Dashboard(
        state=state,
        result=result,
        summary=simulation_summary(result.main, result.problems, False),
        other_summary=simulation_summary(result.other, [], False) if result.other else None,
        baseline_summary=(
            simulation_summary(result.baseline, [], False) if result.baseline else None
        ),
        figure=analysis.figure(result, run),
        problems=listed[:PROBLEMS],
        problem_kind=kind,
        problem_order=request.GET.get("problems") == "step",
        costliest=next((p for p in result.problems if p.dollars > 0), None),
        tools=tools,
        servers=servers,
        problem_kinds=[k for k in PROBLEM_KINDS if any(p.kind == k for p in result.problems)],
        rows=trace.trace_rows(
            run,
            result.main,
            result.problems,
            page - 1,
            result.other,
            sessions.subagent_prompts(request.user, run),
            trace.sorted_steps(result.main, sort, descending),
        ),
        sort=sort,
        descending=descending,
        sort_queries=_sort_queries(result.state.query(), sort, descending),
        table_query=_table_query(result.state.query(), sort, descending),
        page=page,
        pages=pages,
        params=viewstate.param_controls(state, errors, request.GET),
        param_errors=errors,
        snippets=agent_config.snippets(run, state, result.defined),
        permalink=state.query(),
        defer_links=deferring.defer_links(state, tools, servers, _own_policy(run)),
        deferral=deferring.saving(result),
        undefer_query=replace(state, defer="", remove="").query(),
        baseline_query=replace(state, policy=REPLAY, params=POLICIES[REPLAY].Params()).query(),
    )
    response = render(
        request,
        _template(request),
        {**context(frame), **context(shown)},
        status=400 if errors else 200,
    )
    if request.htmx:
        # The URL says what is shown: the state, and the table's order, page and filter.
        shown_query = QueryDict(shown.table_query, mutable=True)
        if kind:
            shown_query["problem"] = kind
        if shown.problem_order:
            shown_query["problems"] = "step"
        if page > 1:
            shown_query["page"] = str(page)
        push_canonical(request, response, shown_query.urlencode())
    return response


def _own_policy(run: Run) -> str:
    """The policy that stands for the run's own mechanism in a what-if: its system's
    compaction where registered, else none."""
    own = own_trigger(run.format)
    return own.name if own is not None else "none"


def _sort_queries(permalink: str, sort: str, descending: bool) -> dict[str, str]:
    """Per column of the trace table, the query that sorts by it: the other way round
    when it is the current order, else largest first (step: from the first)."""
    out = {}
    for key in trace.SORTS:
        if key == sort:
            way = "asc" if descending else "desc"
        else:
            way = "asc" if key == "step" else "desc"
        extra = f"sort={key}&dir={way}"
        out[key] = f"{permalink}&{extra}" if permalink else extra
    return out


def _table_query(permalink: str, sort: str, descending: bool) -> str:
    """The query of the trace table's current order (its pages keep it)."""
    if sort == "step" and not descending:
        return permalink
    extra = f"sort={sort}&dir={'desc' if descending else 'asc'}"
    return f"{permalink}&{extra}" if permalink else extra


def _template(request: HtmxHttpRequest) -> str:
    return "dashboard/run.html#analysis-response" if request.htmx else "dashboard/run.html"


def push_canonical(request: HtmxHttpRequest, response: HttpResponse, query: str) -> None:
    """Have htmx push the canonical URL of the view (defaults left out), not the raw
    form fields."""
    push_url(response, request.path + (f"?{query}" if query else ""))


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw or default)
    except ValueError:
        return default


@require_GET
def step_inspector(request: HtmxHttpRequest, public_id: str, step: int) -> HttpResponse:
    frame = _frame(request, public_id)
    page = context(frame)
    try:
        result = _analysed(request, frame, alone=True)
    except viewstate.BadQuery as exc:
        return render(request, "dashboard/step.html", {**page, "error": str(exc)}, status=400)
    steps = len(result.main.records)
    if not 0 <= step < steps:
        error = f"step {step} does not exist: this run has {steps} requests (0 to {steps - 1})"
        page.update(state=result.state, result=result, error=error)
        return render(request, "dashboard/step.html", page, status=404)
    run = frame.run
    inspected = analysis.inspector_context(run, result, step, _int(request.GET.get("from"), 0))
    page.update(
        state=result.state,
        result=result,
        **inspected,
        timing=trace.step_timing(run, result.main, step),
        captured=captures.calls_of(run, step),
        spawned=sessions.spawned_by_message(
            request.user, run, inspected["items"], inspected["response_index"]
        ),
    )
    return render(request, "dashboard/step.html", page)


@require_GET
def message_text(request: HtmxHttpRequest, public_id: str, index: int) -> HttpResponse:
    run = runs.get_run(request.user, public_id, share_grants.held(request))
    message = runs.get_message(run, index)
    return render(
        request, "dashboard/step.html#message-full", {"text": trace.message_text(message.parts)}
    )


@require_GET
def export_records(request: HtmxHttpRequest, public_id: str, kind: str) -> HttpResponse:
    if kind not in ("csv", "json"):
        raise Http404("exports are csv or json")
    try:
        result = _analysed(request, _frame(request, public_id), alone=True)
    except viewstate.BadQuery as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    name = f"contextsim-{public_id}-{result.state.policy}"
    if kind == "json":
        response = HttpResponse(
            trace.records_json(result.main, result.problems, result.state.defer),
            content_type="application/json",
        )
    else:
        response = HttpResponse(content_type="text/csv")
        csv.writer(response).writerows(trace.records_csv_rows(result.main))
    response["Content-Disposition"] = f'attachment; filename="{name}.{kind}"'
    return response


@require_GET
def ledger(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    frame = _frame(request, public_id)
    template = "dashboard/ledger.html#ledger" if request.htmx else "dashboard/ledger.html"
    try:
        result = _analysed(request, frame, alone=True)
    except viewstate.BadQuery as exc:
        return render(request, template, {**context(frame), "error": str(exc)}, status=400)
    moved = changed_params(result.state.params)
    changed = [p for p in viewstate.param_controls(result.state) if p["name"] in moved]
    page = {
        **context(frame),
        "state": result.state,
        "result": result,
        "ledger": ledger_figure(result.main),
        "permalink": result.state.query(),
        "params": changed,
    }
    return render(request, template, page)


@require_GET
def run_live(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
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
