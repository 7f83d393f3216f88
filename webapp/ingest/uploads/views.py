"""Uploads: the upload page, an import's status, and importing a file again."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp import tasks
from webapp.http import HtmxHttpRequest, SignedInRequest
from webapp.ingest.uploads import services as imports
from webapp.ingest.uploads.forms import UploadForm
from webapp.models import ImportJob
from webapp.runs import reads as runs

SYNC_IMPORT_BYTES = 2 * 1024 * 1024
"""Uploads up to this size are imported in the request, so errors show at once (an
archive never is: imports.in_request)."""


@login_required
@require_http_methods(["GET", "POST"])
def upload(request: SignedInRequest) -> HttpResponse:
    form = UploadForm(request.POST or None, request.FILES or None)
    jobs: list[ImportJob] = []
    if request.method == "POST" and form.is_valid():
        for f in form.cleaned_data["files"]:
            job = imports.store_upload(
                request.user, f.name or "upload", f, form.cleaned_data["format"]
            )
            if imports.in_request(job.upload, SYNC_IMPORT_BYTES):
                job = imports.run_import(job.pk, count_now=True)
            else:
                tasks.import_upload.delay(job.pk)
            jobs.append(job)
    template = "upload.html#results" if request.htmx else "upload.html"
    status = 400 if request.method == "POST" and not form.is_valid() else 200
    return render(request, template, {"form": form, "jobs": jobs}, status=status)


@login_required
@require_POST
def import_again(request: SignedInRequest, public_id: str) -> HttpResponse:
    """Import a file that was imported before, because the person asked."""
    job = runs.get_job(request.user, public_id)
    if job.duplicate_of_id is None:
        return HttpResponse("this import was not refused as a duplicate", status=400)
    job = imports.import_again(job)
    if imports.in_request(job.upload, SYNC_IMPORT_BYTES):
        job = imports.run_import(job.pk, count_now=True)
    else:
        tasks.import_upload.delay(job.pk)
    if request.htmx:
        return render(request, "upload.html#job", {"job": job})
    return render(request, "upload.html", {"form": UploadForm(), "jobs": [job]})


@require_GET
def import_status(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    job = runs.get_job(request.user, public_id)
    if request.htmx:
        return render(request, "upload.html#job", {"job": job})
    return render(request, "upload.html", {"form": UploadForm(), "jobs": [job]})
