"""Runs: the list (search and filters), uploading files, and an import's status."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from webapp import tasks
from webapp.forms import UploadForm
from webapp.models import ImportJob
from webapp.selectors import runs
from webapp.services import imports

SYNC_IMPORT_BYTES = 2 * 1024 * 1024
"""Uploads up to this size are imported in the request, so errors show at once."""


@require_GET
def runs_list(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()
    fmt = request.GET.get("format", "").strip()
    found = runs.search_runs(request.user, query, fmt)
    context = {
        "runs": found[:500],
        "total": found.count(),
        "query": query,
        "format": fmt,
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


@require_GET
def import_status(request: HttpRequest, public_id: str) -> HttpResponse:
    job = runs.get_job(request.user, public_id)
    return render(request, "upload.html#job", {"job": job})
