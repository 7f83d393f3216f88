"""Bad input through the web: mutations of the real corpus logs (tests/mutations.py)
uploaded on the upload page and posted to the API, and mutated append bodies. Never a
500 or a traceback; a refused file saves nothing and says what was wrong and where."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import corpus_root
from tests.mutations import MUTATION, ODD_VALUES, corpus_files, mutated, replace_at
from tests.web.test_streaming import HEADER, _round
from webapp.access.services.tokens import create_token
from webapp.models import ImportJob, Message, Run

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SMALL = 1_100_000  # bytes: imported in the request, so each example is seen whole


def _files():
    files = corpus_files(SMALL)
    if not files:
        pytest.skip(f"real-log corpus not found at {corpus_root()}")
    return files


@FUZZ
@given(**MUTATION)
def test_a_mutated_log_uploaded_is_imported_or_refused_with_nothing_saved(
    alice_client, choice, line, path, odd, cut, kind
):
    files = _files()
    file = files[choice % len(files)]
    data = mutated(file, line, path, odd, cut, kind)
    before = Run.objects.count()
    jobs = ImportJob.objects.count()
    response = alice_client.post(
        reverse("upload"), {"files": SimpleUploadedFile(file.name, data), "format": ""}
    )
    if not data:  # a one-document log cut to nothing: the form refuses it, no job
        assert response.status_code == 400
        assert "empty" in response.content.decode()
        assert ImportJob.objects.count() == jobs and Run.objects.count() == before
        return
    assert response.status_code == 200
    assert ImportJob.objects.count() == jobs + 1
    job = ImportJob.objects.latest("pk")
    assert job.status in ("done", "failed")
    if job.status == "failed":
        assert Run.objects.count() == before  # nothing half-saved
        assert file.name in job.error and "internal error" not in job.error
        assert "Not imported." in response.content.decode()
    elif job.duplicate_of is None:
        # New runs, or sessions imported before recognised by their content.
        assert Run.objects.count() == before + job.upload.runs.count()
        assert job.upload.runs.exists() or job.recognised.exists()


@FUZZ
@given(**MUTATION)
def test_a_mutated_log_posted_to_the_api_makes_runs_or_a_400_naming_where(
    alice, choice, line, path, odd, cut, kind
):
    files = _files()
    file = files[choice % len(files)]
    data = mutated(file, line, path, odd, cut, kind)
    key = create_token(alice, "fuzz")[1]
    before = Run.objects.count()
    response = Client().post(
        reverse("api-runs"),
        data,
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code in (201, 400), response.content[:300]
    body = response.json()
    if response.status_code == 400:
        assert Run.objects.count() == before
        assert body["error"] and "internal error" not in body["error"]
    else:
        assert Run.objects.count() == before + len(body["runs"])


@FUZZ
@given(path=st.lists(st.integers(0, 20), max_size=6), odd=ODD_VALUES)
def test_a_mutated_append_is_applied_whole_or_refused_changing_nothing(alice, path, odd):
    key = create_token(alice, "fuzz")[1]
    client = Client()
    auth = {"Authorization": f"Bearer {key}"}
    created = client.post(
        reverse("api-runs"), json.dumps(HEADER), content_type="application/json", headers=auth
    )
    run_id = created.json()["runs"][0]["id"]
    body = replace_at({"messages": [{"role": "user", "content": "go"}, *_round(0)]}, path, odd)
    response = client.post(
        reverse("api-append", args=[run_id]),
        json.dumps(body),
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code in (200, 400, 409), response.content[:300]
    run = Run.objects.get(public_id=run_id)
    stored = Message.objects.filter(run=run).count()
    if response.status_code == 200:
        assert stored == run.message_count == response.json()["messages"] > 0
    else:
        assert stored == run.message_count == 0
        assert response.json()["error"]


def test_half_an_emoji_in_an_append_is_stored_replaced(alice):
    """A lone surrogate (the body's JSON allows one; no database takes it) in a tool
    call's arguments, found by the fuzz test on PostgreSQL: replaced by U+FFFD, as a
    file's are."""
    key = create_token(alice, "fuzz")[1]
    client = Client()
    auth = {"Authorization": f"Bearer {key}"}
    created = client.post(
        reverse("api-runs"), json.dumps(HEADER), content_type="application/json", headers=auth
    )
    run_id = created.json()["runs"][0]["id"]
    call = {"type": "tool_call", "id": "c0", "name": "read", "arguments": "\ud800"}
    body = {
        "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [call]}]
    }
    response = client.post(
        reverse("api-append", args=[run_id]),
        json.dumps(body),
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 200, response.content[:300]
    stored = Message.objects.get(run__public_id=run_id, index=1)
    assert stored.parts[0]["arguments"] == "\ufffd"
