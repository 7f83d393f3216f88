"""Runs: the list (search and filters), uploading files, an import's status, and
managing a run (rename, notes, tags, delete)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.http import HtmxHttpRequest
from webapp.runs import reads as runs
from webapp.runs import search
from webapp.runs import services as run_edits


@require_GET
def captured_session(request: HtmxHttpRequest, name: str) -> HttpResponse:
    """`/sessions/<name>/`: the live dashboard of a captured session (what `contextsim
    run` prints), or a page that waits for its first call."""
    run = runs.captured_session(request.user, name)
    if run is not None:
        return redirect("run", public_id=run.public_id)
    response = render(request, "session_waiting.html", {"name": name}, status=200)
    response["Refresh"] = "2"  # looked again until the agent's first call is recorded
    return response


@require_GET
def runs_list(request: HtmxHttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()
    fmt = request.GET.get("format", "").strip()
    tag = request.GET.get("tag", "").strip().lower()
    found = runs.search_runs(request.user, query, fmt, tag)
    context = {
        "runs": found[:500],
        "total": found.count(),
        "query": query,
        "format": fmt,
        "tag": tag,
        "tags": runs.user_tags(request.user),
        "hits": search.search_messages(request.user, query) if query else [],
        "unindexed": search.unindexed_runs(request.user) if query else [],
        "formats": runs.run_formats(request.user),
        "live_since": timezone.now() - runs.LIVE_FOR,
    }
    template = "runs.html#run-table" if request.htmx else "runs.html"
    return render(request, template, context)


@require_POST
def edit_run(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    """Rename a run, set its notes and tags (its owner only)."""
    run = runs.get_owned_run(request.user, public_id)
    post = request.POST
    try:
        run_edits.edit_run(run, post.get("title", ""), post.get("notes", ""), post.get("tags", ""))
    except ValueError as exc:
        messages.error(request, f"Not saved: {exc}")
    else:
        messages.success(request, "Saved.")
    return redirect(reverse("run", args=[run.public_id]) + "#manage")


@require_http_methods(["GET", "POST"])
def delete_run(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    """GET: what deleting the run removes, and a button to confirm; POST: delete it
    (its owner only)."""
    run = runs.get_owned_run(request.user, public_id)
    if request.method == "POST":
        title = run.title
        run_edits.delete_run(run)
        messages.success(request, f"Deleted “{title}”.")
        return redirect("runs")
    counts = run_edits.deletion_counts(run)
    return render(request, "run_delete.html", {"run": run, "counts": counts})
