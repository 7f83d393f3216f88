"""The runs list, the upload page and the run page, through the Django test client."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from tests.web.test_import_service import NATIVE, import_bytes
from webapp.models import Run

pytestmark = pytest.mark.django_db


def upload(client: Client, *files: tuple[str, bytes], fmt: str = "", htmx: bool = False):
    data = {"files": [SimpleUploadedFile(n, b) for n, b in files], "format": fmt}
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(reverse("upload"), data, **headers)


def test_empty_runs_list_invites_an_upload(alice_client):
    page = alice_client.get(reverse("runs")).content.decode()
    assert "No runs yet." in page
    assert reverse("upload") in page


def test_upload_of_several_files_imports_each_and_links_its_runs(alice_client):
    response = upload(alice_client, ("a.json", json.dumps(NATIVE).encode()), ("b.json", b"[1,"))
    page = response.content.decode()
    assert response.status_code == 200
    for run in Run.objects.all():
        assert f"/runs/{run.public_id}/" in page
    assert "Not imported." in page and "b.json: line 1: invalid JSON" in page


def test_upload_via_htmx_returns_only_the_results_partial(alice_client):
    response = upload(alice_client, ("a.json", json.dumps(NATIVE).encode()), htmx=True)
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="results"')
    assert "<html" not in page


def test_upload_with_format_override_uses_that_importer(alice_client):
    response = upload(alice_client, ("a.json", json.dumps(NATIVE).encode()), fmt="openai")
    assert "Not imported." in response.content.decode()
    assert Run.objects.count() == 0


def test_upload_requires_sign_in(db):
    response = Client().get(reverse("upload"))
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_message_content_is_escaped_on_every_page(alice, alice_client):
    evil = json.loads(json.dumps(NATIVE))
    evil["runs"][0]["title"] = "<script>alert(1)</script>"
    import_bytes(alice, "evil.json", json.dumps(evil).encode())
    run = Run.objects.get(session_id="s1")
    for url in (
        reverse("runs"),
        reverse("run", args=[run.public_id]),
        reverse("run-requests", args=[run.public_id]),
        reverse("step", args=[run.public_id, 1]),
    ):
        page = alice_client.get(url).content.decode()
        assert "<script>alert(1)</script>" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_runs_are_private_to_their_owner(alice, bob):
    import_bytes(alice, "a.json", json.dumps(NATIVE).encode())
    run = Run.objects.get(session_id="s1")
    bob_client = Client()
    bob_client.force_login(bob)
    assert bob_client.get(reverse("run", args=[run.public_id])).status_code == 404
    assert run.public_id not in bob_client.get(reverse("runs")).content.decode()
    assert Client().get(reverse("run", args=[run.public_id])).status_code == 404


def test_search_and_format_filter_narrow_the_list(alice, alice_client):
    import_bytes(alice, "a.json", json.dumps(NATIVE).encode())
    page = alice_client.get(reverse("runs"), {"q": "helper"}).content.decode()
    assert "helper" in page and ">main<" not in page
    page = alice_client.get(reverse("runs"), {"format": "codex"}).content.decode()
    assert "No run matches" in page
    partial = alice_client.get(reverse("runs"), {"q": "main"}, HTTP_HX_REQUEST="true")
    assert partial.content.decode().lstrip().startswith('<div id="run-table">')


def test_run_page_lists_requests_with_every_estimator_and_measured(alice, alice_client):
    import_bytes(alice, "a.json", json.dumps(NATIVE).encode())
    run = Run.objects.get(session_id="s1")
    page = alice_client.get(reverse("run-requests", args=[run.public_id])).content.decode()
    for name in ("chars4", "script", "cl100k", "o200k"):
        assert f">{name}</th>" in page
    assert ">125</td>" in page and ">300</td>" in page
    assert "helper" in page  # the collection's other run


def test_unknown_run_is_404_not_500(alice_client):
    assert alice_client.get("/runs/nope/").status_code == 404


def test_a_small_upload_is_counted_by_every_estimator_as_it_is_written(alice_client, monkeypatch):
    """Imported while the uploader waits: nothing is read back to be counted."""
    from contextsim.counting.estimators import ESTIMATORS
    from webapp.models import Message, Run, RunSkeleton
    from webapp.store.actions import derivation

    def never(*args, **kwargs):
        raise AssertionError("a stored message was read back")

    monkeypatch.setattr(derivation, "stored_message", never)
    log = b'{"role": "user", "content": "read it"}\n{"role": "assistant", "content": "ok"}\n'
    assert upload(alice_client, ("chat.jsonl", log)).status_code == 200
    run = Run.objects.get()
    assert run.counting == []
    assert set(RunSkeleton.objects.filter(run=run).values_list("estimator", flat=True)) == set(
        ESTIMATORS
    )
    for counts in Message.objects.filter(run=run).values_list("counts", flat=True):
        assert set(counts) == set(ESTIMATORS)


def test_a_small_zip_is_unpacked_by_a_worker_not_in_the_request(
    alice_client, monkeypatch, settings
):
    import io
    import zipfile

    from webapp.ingest.uploads import services as imports
    from webapp.models import ImportJob

    queued: list[int] = []
    monkeypatch.setattr("webapp.tasks.import_upload.delay", queued.append)
    settings.MAX_UPLOAD_BYTES = 10_000_000
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bomb.jsonl", b"0" * 50_000_000)  # 50 MB in about 50 KB
    assert len(packed.getvalue()) < 100_000
    response = upload(alice_client, ("small.zip", packed.getvalue()))
    assert response.status_code == 200
    (job,) = ImportJob.objects.all()
    assert queued == [job.pk] and job.status == ImportJob.Status.QUEUED
    # The worker refuses it from what the zip says it unpacks to, before unpacking.
    done = imports.run_import(job.pk)
    assert done.status == ImportJob.Status.FAILED
    assert "unpacks to 50,000,000 bytes; at most 10,000,000" in done.error
    assert Run.objects.count() == 0


def test_a_full_disk_is_said_and_leaves_nothing_behind(
    alice_client, monkeypatch, settings, tmp_path
):
    import errno
    from pathlib import Path

    from django.core.files.storage import FileSystemStorage
    from django.db import OperationalError

    from webapp.models import ImportJob, Upload

    settings.MEDIA_ROOT = tmp_path / "media"

    def full(self, name, content):  # type: ignore[no-untyped-def]
        Path(self.path(name)).parent.mkdir(parents=True, exist_ok=True)
        Path(self.path(name)).write_bytes(b"part of it")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(FileSystemStorage, "_save", full)
    response = upload(alice_client, ("a.json", json.dumps(NATIVE).encode()))
    assert response.status_code == 507 and "disk is full" in response.content.decode()
    assert Upload.objects.count() == ImportJob.objects.count() == 0
    assert [p for p in (tmp_path / "media").rglob("*") if p.is_file()] == []
    # The database's disk full, at the API: said as JSON.
    from webapp.access.services.tokens import create_token

    def database_full(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OperationalError("database or disk is full")

    monkeypatch.setattr("webapp.store.actions.appends.do_create_live_runs", database_full)
    monkeypatch.setattr("webapp.ingest.live.views.streaming.do_create_live_runs", database_full)
    user = Run.objects.model._meta.get_field("owner").related_model.objects.get(username="alice")
    key = create_token(user, "agent")[1]
    body = json.dumps({"contextsim": 1, "runs": [{"title": "t", "messages": []}]})
    answer = Client().post(
        "/api/runs/",
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert answer.status_code == 507 and "disk is full" in answer.json()["error"]
