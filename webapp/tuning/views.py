"""Tunings: the list, the form that starts one over chosen runs (`?run=`,
`?collection=`, or an overview's filters), its page (progress while workers search the
cells, then each mechanism's recommendation, frontier and configuration), and
cancelling it. HTTP only: the work is in webapp.tuning.services and .reads."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRefresh

from contextsim.analysis.tuning import Mechanism, grid_of, policy_mechanism
from contextsim.engine.simulate import REPLAY
from contextsim.registry import EVERY_MECHANISM, POLICIES, mechanisms
from webapp import tasks
from webapp.estimators import reads as estimators
from webapp.http import SignedInRequest
from webapp.models import Run
from webapp.overview import reads as overview
from webapp.overview.views import BadFilter, _filters
from webapp.runs import reads as runs
from webapp.tuning import reads, services

MAX_CHOSEN = 2_000
"""Runs one form may carry."""


@login_required
@require_GET
def tunings_list(request: SignedInRequest) -> HttpResponse:
    return render(request, "tunings/list.html", {"tunings": reads.own_tunings(request.user)[:200]})


def _chosen(request: SignedInRequest, query: QueryDict) -> list[Run]:
    """The runs a link or the form names: `run` ids, a `collection`, else the
    overview's filters (the runs behind its figures)."""
    visible = runs.search_runs(request.user).filter(owner=request.user)
    if query.getlist("run") or query.get("collection"):
        found = list(visible.order_by("id")[:20_000])
        wanted = set(runs.preselected_runs(found, query))
        return [r for r in found if r.public_id in wanted][:MAX_CHOSEN]
    filters = _filters(query)
    _, total = overview.overview(request.user, filters, "session")
    return list(visible.filter(pk__in=total.runs).order_by("id")[:MAX_CHOSEN])


@login_required
@require_http_methods(["GET", "POST"])
def new_tuning(request: SignedInRequest) -> HttpResponse:
    query = request.POST if request.method == "POST" else request.GET
    try:
        chosen = _chosen(request, query)
    except BadFilter as exc:
        return render(request, "tunings/new.html", {"error": str(exc)}, status=400)
    names = list(estimators.estimators_for(request.user))
    offered = {m.name: m.label for r in chosen for m in mechanisms(r.format)}
    others = {n: m.label for n, m in EVERY_MECHANISM.items() if n not in offered}
    error = ""
    policy, grid = query.get("policy", ""), query.get("grid", "")
    if request.method == "POST":
        estimator = query.get("estimator", "")
        asked = query.getlist("mechanism")
        picked = [m for m in asked if m in offered]
        everywhere = [m for m in asked if m in others]
        unknown = [m for m in asked if m not in offered and m not in others]
        extra, bad_policy = _policy_asked(policy, grid)
        if estimator not in names:
            error = f"estimator: choose one of {', '.join(names)}"
        elif unknown:
            error = f"mechanism: unknown {', '.join(unknown)}"
        elif bad_policy:
            error = bad_policy
        elif not picked and not everywhere and not extra:
            error = "mechanism: choose at least one"
        else:
            try:
                tuning = services.create_tuning(
                    request.user,
                    chosen,
                    estimator=estimator,
                    only=picked,
                    everywhere=everywhere,
                    extra=extra,
                )
            except ValueError as exc:
                error = str(exc)
            else:
                tasks.queue_tuning(tuning)
                return redirect("tuning", tuning.public_id)
    context = {
        "chosen": chosen,
        "offered": offered,
        "others": others,
        "policies": [(n, p.label) for n, p in POLICIES.items() if n != REPLAY],
        "policy": policy,
        "grid": grid,
        "estimators": names,
        "estimator": query.get("estimator", "o200k" if "o200k" in names else names[0]),
        "error": error,
    }
    return render(request, "tunings/new.html", context, status=400 if error else 200)


def _policy_asked(policy: str, grid: str) -> tuple[list[Mechanism], str]:
    """The mechanism the form's "any policy" asks for ([] when none), or why not."""
    if not policy:
        return [], "values: choose the policy they are for" if grid.strip() else ""
    if policy not in POLICIES or policy == REPLAY:
        return [], f"policy: unknown {policy[:80]!r}"
    chosen = POLICIES[policy]
    try:
        values = grid_of(grid.splitlines())
        return [policy_mechanism(policy, chosen.label, chosen.Params, values)], ""
    except ValueError as exc:
        return [], f"values: {exc}"


@login_required
@require_GET
def tuning_detail(request: SignedInRequest, public_id: str) -> HttpResponse:
    """While cells are open the page polls its progress line; once they are all done
    that poll reloads the page, which then shows every mechanism's result."""
    tuning = reads.get_tuning(request.user, public_id)
    progress = reads.progress(tuning)
    if request.htmx:
        response = render(
            request, "tunings/detail.html#progress", {"tuning": tuning, "progress": progress}
        )
        return HttpResponseClientRefresh() if progress.finished else response
    views = reads.mechanism_views(tuning) if progress.finished else []
    figures = {v.name: reads.frontier_figure(v) for v in views}
    context = {
        "tuning": tuning,
        "progress": progress,
        "views": [(v, figures[v.name]) for v in views],
        "run_count": tuning.runs.count(),
    }
    return render(request, "tunings/detail.html", context)


@login_required
@require_POST
def cancel_tuning(request: SignedInRequest, public_id: str) -> HttpResponse:
    tuning = reads.get_tuning(request.user, public_id)
    services.do_cancel(tuning)
    return redirect("tuning", tuning.public_id)
