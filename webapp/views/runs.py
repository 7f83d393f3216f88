"""Runs: the list (search and filters), uploading files, an import's status, and
managing a run (rename, notes, tags, delete)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp import tasks
from webapp.forms import UploadForm
from webapp.models import ImportJob
from webapp.selectors import runs, search
from webapp.services import imports, run_edits

SYNC_IMPORT_BYTES = 2 * 1024 * 1024
"""Uploads up to this size are imported in the request, so errors show at once."""


@require_GET
def runs_list(request: HttpRequest) -> HttpResponse:
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


@login_required
@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    form = UploadForm(request.POST or None, request.FILES or None)
    jobs: list[ImportJob] = []
    if request.method == "POST" and form.is_valid():
        for f in form.cleaned_data["files"]:
            job = imports.store_upload(
                request.user, f.name or "upload", f, form.cleaned_data["format"]
            )
            if (f.size or 0) <= SYNC_IMPORT_BYTES:
                job = imports.run_import(job.pk)
            else:
                tasks.import_upload.delay(job.pk)
            jobs.append(job)
    template = "upload.html#results" if request.htmx else "upload.html"
    status = 400 if request.method == "POST" and not form.is_valid() else 200
    return render(request, template, {"form": form, "jobs": jobs}, status=status)


@login_required
@require_POST
def import_again(request: HttpRequest, public_id: str) -> HttpResponse:
    """Import a file that was imported before, because the person asked."""
    job = runs.get_job(request.user, public_id)
    if job.duplicate_of_id is None:
        return HttpResponse("this import was not refused as a duplicate", status=400)
    job = imports.import_again(job)
    if job.upload.size <= SYNC_IMPORT_BYTES:
        job = imports.run_import(job.pk)
    else:
        tasks.import_upload.delay(job.pk)
    if request.htmx:
        return render(request, "upload.html#job", {"job": job})
    return render(request, "upload.html", {"form": UploadForm(), "jobs": [job]})


@require_POST
def edit_run(request: HttpRequest, public_id: str) -> HttpResponse:
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
def delete_run(request: HttpRequest, public_id: str) -> HttpResponse:
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


@require_GET
def import_status(request: HttpRequest, public_id: str) -> HttpResponse:
    job = runs.get_job(request.user, public_id)
    if request.htmx:
        return render(request, "upload.html#job", {"job": job})
    return render(request, "upload.html", {"form": UploadForm(), "jobs": [job]})
