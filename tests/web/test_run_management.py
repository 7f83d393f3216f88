"""Managing runs: rename, notes and tags (the list filtered by tag), delete with all that
hangs off a run after a confirmation, owner only; the same file uploaded twice links to
the first import unless asked to import it again."""

from __future__ import annotations

import html
import json

import pytest
from django.test import Client
from django.urls import reverse

from tests.web.test_dashboard import native_run
from tests.web.test_import_service import import_bytes
from webapp.access.services.sharing import create_link
from webapp.models import Collection, Message, Run, RunSkeleton, ShareLink, Tag

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(alice) -> Run:
    import_bytes(alice, "dash.json", native_run(rounds=4))
    return Run.objects.get(title="dash")


def _edit(client, run, **fields):
    data = {"title": run.title, "notes": "", "tags": "", **fields}
    return client.post(reverse("run-edit", args=[run.public_id]), data, follow=True)


def test_the_owner_renames_notes_and_tags_and_the_list_filters_by_tag(alice_client, run):
    page = _edit(
        alice_client, run, title="  The  overflow ", notes="see step 3", tags="Prod, overflow prod"
    )
    assert "Saved." in page.content.decode()
    run.refresh_from_db()
    assert run.title == "The overflow" and run.notes == "see step 3"
    assert sorted(t.name for t in run.tags.all()) == ["overflow", "prod"]
    listed = alice_client.get(reverse("runs"), {"tag": "prod"}).content.decode()
    assert "The overflow" in listed and "tagged #prod" in listed
    assert (
        "The overflow" not in alice_client.get(reverse("runs"), {"tag": "other"}).content.decode()
    )
    _edit(alice_client, run, title="The overflow", tags="overflow")
    assert list(Tag.objects.values_list("name", flat=True)) == ["overflow"]  # none left unused


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"title": "   "}, "title: a run needs a title"),
        ({"tags": "ok, not ok!"}, "tags: 'ok!' is not a tag"),
        ({"title": "x" * 301}, "title: at most 300 characters"),
    ],
)
def test_a_bad_edit_says_which_field_and_saves_nothing(alice_client, run, fields, message):
    page = html.unescape(_edit(alice_client, run, notes="changed", **fields).content.decode())
    assert "Not saved: " + message in page
    run.refresh_from_db()
    assert run.title == "dash" and run.notes == "" and not run.tags.exists()


def test_nobody_but_the_owner_may_edit_or_delete(bob, run):
    client = Client()
    client.force_login(bob)
    assert _edit(client, run, title="mine").status_code == 404
    assert client.get(reverse("run-delete", args=[run.public_id])).status_code == 404
    assert client.post(reverse("run-delete", args=[run.public_id])).status_code == 404
    assert Client().post(reverse("run-delete", args=[run.public_id])).status_code == 404
    assert Run.objects.filter(pk=run.pk).exists()


def test_delete_asks_first_then_removes_the_run_and_what_hangs_off_it(alice, alice_client, run):
    alice_client.get(reverse("run", args=[run.public_id]), {"estimator": "chars4"})
    create_link(run, alice)
    assert RunSkeleton.objects.filter(run=run).exists()
    url = reverse("run-delete", args=[run.public_id])
    confirm = alice_client.get(url).content.decode()
    messages = Message.objects.filter(run=run).count()
    assert f"{messages} messages" in confirm and "1 share links" in confirm
    assert Run.objects.filter(pk=run.pk).exists()  # asking deletes nothing
    done = alice_client.post(url, follow=True).content.decode()
    assert "Deleted “dash”." in done
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not Message.objects.filter(run_id=run.pk).exists()
    assert not ShareLink.objects.exists() and not RunSkeleton.objects.exists()


def test_deleting_the_last_run_of_a_collection_removes_the_collection(alice, alice_client):
    from tests.web.test_sessions import AGENT, MAIN

    import_bytes(alice, "s.jsonl", MAIN)
    import_bytes(alice, "agent.jsonl", AGENT)
    first, second = Run.objects.all()
    for r in (first, second):
        alice_client.post(reverse("run-delete", args=[r.public_id]))
        assert Collection.objects.exists() == (r == first)


def test_the_same_file_again_links_to_the_first_import_unless_asked(alice, alice_client):
    data = native_run(rounds=2)
    first = import_bytes(alice, "a.json", data)
    again = import_bytes(alice, "a copy.json", data)
    assert again.status == "done" and again.duplicate_of == first.upload
    assert Run.objects.count() == 1
    forced = alice_client.post(reverse("import-again", args=[again.public_id]))
    assert forced.status_code == 200 and Run.objects.count() == 2
    again.refresh_from_db()
    assert again.duplicate_of is None and again.status == "done"
    third = import_bytes(alice, "b.json", json.dumps({"contextsim": 1, "runs": []}).encode())
    assert third.duplicate_of is None


def test_another_owners_identical_file_is_no_duplicate(alice, bob):
    data = native_run(rounds=2)
    import_bytes(alice, "a.json", data)
    assert import_bytes(bob, "a.json", data).duplicate_of is None
    assert Run.objects.count() == 2


def test_the_trace_and_the_inspector_show_when_each_call_was_made(alice, alice_client):
    messages = [
        {"role": "user", "content": "go", "timestamp": "2026-03-01T10:00:00Z"},
        {"role": "assistant", "content": "thinking it over", "timestamp": "2026-03-01T10:00:02.5Z"},
        {"role": "user", "content": "and?", "timestamp": "2026-03-01T10:01:00Z"},
        {"role": "assistant", "content": "done", "timestamp": "2026-03-01T10:01:07Z"},
    ]
    data = {"contextsim": 1, "runs": [{"title": "timed", "messages": messages}]}
    import_bytes(alice, "t.json", json.dumps(data).encode())
    run = Run.objects.get(title="timed")
    page = alice_client.get(reverse("run", args=[run.public_id])).content.decode()
    assert "<th>Time (UTC)</th>" in page
    assert "2026-03-01 10:00:02" in page and "2.5 s" in page and "7.0 s" in page
    step = alice_client.get(reverse("step", args=[run.public_id, 1])).content.decode()
    assert "Sent at" in step and "2026-03-01 10:01:00 UTC" in step
    assert "the response began 7.0 s later" in step
    import_bytes(alice, "u.json", native_run(rounds=2))
    untimed = Run.objects.get(title="dash")
    plain = alice_client.get(reverse("run", args=[untimed.public_id])).content.decode()
    assert "<th>Time (UTC)</th>" not in plain


def test_the_chart_can_be_drawn_against_time(alice, alice_client):
    messages = [
        {"role": "user", "content": "go", "timestamp": "2026-03-01T10:00:00Z"},
        {"role": "assistant", "content": "a", "timestamp": "2026-03-01T10:00:02Z"},
        {"role": "user", "content": "and?"},
        {"role": "assistant", "content": "b", "timestamp": "2026-03-01T10:05:00Z"},
    ]
    data = {"contextsim": 1, "runs": [{"title": "timed", "messages": messages}]}
    import_bytes(alice, "t.json", json.dumps(data).encode())
    run = Run.objects.get(title="timed")
    url = reverse("run", args=[run.public_id])
    page = alice_client.get(url, {"x": "time", "estimator": "chars4"}).content.decode()
    assert 'name="x"' in page and '<option value="time" selected>' in page
    figure = json.loads(
        page.split('id="figure-data" type="application/json">')[1].split("</script>")[0]
    )
    assert figure["layout"]["xaxis"]["type"] == "date"
    sent = next(t for t in figure["data"] if t.get("x") and t.get("customdata"))
    assert sent["x"] == ["2026-03-01T10:00:02Z", "2026-03-01T10:05:00Z"]
    assert sent["customdata"] == [0, 1]
    assert alice_client.get(url, {"x": "calendar"}).status_code == 400
