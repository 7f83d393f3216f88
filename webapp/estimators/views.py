"""Estimator pages: a run's text by script, its requests' estimates against measured
usage, fitting a custom estimator, and a playground for any text."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from contextsim.analysis.estimator_report import REFERENCES, compare_text
from contextsim.counting.estimators import ESTIMATORS
from contextsim.counting.fitting import MIN_REQUESTS
from contextsim.counting.scripts import segments
from webapp import tasks
from webapp.access import grants as share_grants
from webapp.estimators import reads as estimators
from webapp.estimators import services as custom_estimators
from webapp.estimators.charts import estimates_figure
from webapp.estimators.reads import script_rows
from webapp.http import HtmxHttpRequest, SignedInRequest
from webapp.runs import reads as runs
from webapp.store.reads import estimator_report

HIGHLIGHT_CHARS = 20_000


def _reference(request: HtmxHttpRequest) -> tuple[str, str]:
    reference = request.GET.get("reference") or request.POST.get("reference") or "o200k"
    if reference not in REFERENCES:
        return "o200k", f"reference: unknown {reference!r}; expected o200k or cl100k"
    return reference, ""


@require_GET
def run_requests(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    """Every request's estimated size by each estimator beside its measured usage."""
    run = runs.get_run(request.user, public_id, share_grants.held(request))
    rows = estimators.request_rows(run)
    counted = rows[0].estimates if rows else ESTIMATORS
    context = {
        "run": run,
        "rows": rows,
        "estimators": [e for name, e in ESTIMATORS.items() if name in counted],
        "siblings": runs.siblings(request.user, run),
    }
    return render(request, "estimators/requests.html", context)


@require_GET
def run_estimators(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    run = runs.get_run(request.user, public_id, share_grants.held(request))
    reference, error = _reference(request)
    try:
        budget = int(request.GET.get("budget") or 400_000)
        if budget <= 0:
            raise ValueError
    except ValueError:
        budget, error = 400_000, "budget: expected a positive whole number of tokens"
    rows = estimators.request_rows(run)
    report, stored = estimator_report(run, reference)
    if not stored:  # computed for this view: a job stores it (this view writes nothing)
        tasks.store_report.delay(run.pk, reference)
    misses = [
        {"step": r.step, "estimator": name, "estimate": r.estimates[name], "measured": r.measured}
        for r in rows
        if r.measured is not None and r.measured > budget
        for name in r.estimates
        if r.estimates[name] <= budget
    ]
    context = {
        "run": run,
        "reference": reference,
        "references": list(REFERENCES),
        "budget": budget,
        "error": error,
        "scripts": script_rows(report),
        "estimators": list(ESTIMATORS),
        "counting": run.counting,
        "misses": misses[:200],
        "miss_count": len(misses),
        "figure": estimates_figure(rows, budget),
        "measured": any(r.measured for r in rows),
        "fitted": estimators.custom_rates(request.user),
        "measured_requests": sum(1 for r in rows if r.measured),
        "min_requests": MIN_REQUESTS,
        "can_fit": request.user.is_authenticated
        and (run.owner_id == request.user.pk or run.visibility == "public"),
    }
    return render(request, "estimators/run.html", context, status=400 if error else 200)


@login_required
@require_POST
def fit_custom(request: SignedInRequest, public_id: str) -> HttpResponse:
    run = runs.get_run(request.user, public_id)
    try:
        custom_estimators.fit_from_run(run, request.user)
    except ValueError as exc:
        messages.error(request, str(exc))
    return redirect(reverse("run-estimators", args=[run.public_id]) + "#fitted")


@require_http_methods(["GET", "POST"])
def playground(request: HtmxHttpRequest) -> HttpResponse:
    reference, error = _reference(request)
    # A form sends a textarea's line breaks as CRLF (the HTML standard): count the text
    # as it was pasted, one character per line break. An uploaded file is counted as is.
    most = estimators.playground_limit(request.user)
    text = request.POST.get("text", "").replace("\r\n", "\n")
    upload = request.FILES.get("file")
    if upload is not None:
        try:
            text = upload.read(4 * most + 4).decode("utf-8")
        except UnicodeDecodeError as exc:
            error = f"{upload.name}: not valid UTF-8 text (byte offset {exc.start})"
    if len(text) > most:
        signed = "" if request.user.is_authenticated else " (sign in to count more)"
        error = f"the text is over {most:,} characters{signed}; paste or upload less"
        text = ""
    context: dict[str, Any] = {
        "reference": reference,
        "references": list(REFERENCES),
        "text": text,
        "error": error,
        "estimators": list(ESTIMATORS),
    }
    if text and not error:
        context["scripts"] = script_rows(compare_text(text, reference))
        shown = text[:HIGHLIGHT_CHARS]
        context["pieces"] = [(script, shown[a:b]) for script, a, b in segments(shown)]
        context["cut"] = len(text) > HIGHLIGHT_CHARS
    template = "estimators/playground.html#result" if request.htmx else "estimators/playground.html"
    return render(request, template, context, status=400 if error else 200)
