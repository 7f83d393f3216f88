"""Share links: an owner shares a private run (or one of its steps); whoever opens the
link sees it read-only until the owner revokes it; nothing else becomes visible."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from tests.web.test_dashboard import native_run
from tests.web.test_import_service import NATIVE, import_bytes
from webapp.models import Run, ShareLink

pytestmark = pytest.mark.django_db


@pytest.fixture
def private_run(alice) -> Run:
    import_bytes(alice, "dash.json", native_run())
    run = Run.objects.get(title="dash")
    assert run.visibility == "private"
    return run


def _create(client: Client, run: Run, target: str = "") -> ShareLink:
    query = {"next": target} if target else {}
    url = reverse("share", args=[run.public_id])
    response = client.post(url + ("?" + "&".join(f"{k}={v}" for k, v in query.items())))
    assert response.status_code == 302
    return ShareLink.objects.filter(run=run).first()  # type: ignore[return-value]


def _pages(run: Run) -> list[str]:
    pid = run.public_id
    return [
        reverse("run", args=[pid]),
        reverse("step", args=[pid, 1]) + "?budget=8000",
        reverse("ledger", args=[pid]),
        reverse("export", args=[pid, "csv"]),
        reverse("run-requests", args=[pid]),
        reverse("message-text", args=[pid, 0]),
    ]


def test_a_share_link_opens_a_private_run_read_only_until_revoked(alice_client, private_run):
    visitor = Client()
    assert all(visitor.get(url).status_code == 404 for url in _pages(private_run))
    link = _create(alice_client, private_run)
    opened = visitor.get(reverse("open-share", args=[link.token]))
    assert opened.status_code == 302 and opened["Location"] == f"/runs/{private_run.public_id}/"
    assert [visitor.get(url).status_code for url in _pages(private_run)] == [200] * 6
    dashboard = visitor.get(_pages(private_run)[0]).content.decode()
    # Read-only: no share or sweep controls for the visitor.
    assert reverse("share", args=[private_run.public_id]) not in dashboard
    assert reverse("sweep-new") + "?run=" not in dashboard
    assert visitor.get(reverse("share", args=[private_run.public_id])).status_code == 302
    revoke = reverse("revoke-share", args=[private_run.public_id, link.token])
    assert alice_client.post(revoke).status_code == 302
    assert all(visitor.get(url).status_code == 404 for url in _pages(private_run))
    assert visitor.get(reverse("open-share", args=[link.token])).status_code == 404


def test_a_share_link_grants_that_run_only(alice, alice_client, private_run):
    import_bytes(alice, "other.json", json.dumps(NATIVE).encode())
    other = Run.objects.exclude(pk=private_run.pk).first()
    assert other is not None
    link = _create(alice_client, private_run)
    visitor = Client()
    visitor.get(reverse("open-share", args=[link.token]))
    assert visitor.get(reverse("run", args=[other.public_id])).status_code == 404
    assert visitor.get(reverse("runs")).content.decode().count(private_run.public_id) == 0


def test_a_step_link_lands_on_that_step_with_its_settings(alice_client, private_run):
    step = reverse("step", args=[private_run.public_id, 2]) + "?budget=8000&policy=turns"
    page = alice_client.get(reverse("share", args=[private_run.public_id]), {"next": step})
    assert "Create a share link" in page.content.decode()
    link = _create(alice_client, private_run, target=step.replace("&", "%26"))
    listed = alice_client.get(reverse("share", args=[private_run.public_id]), {"next": step})
    share_url = f"/s/{link.token}/?next=%2Fruns%2F{private_run.public_id}%2Fsteps%2F2%2F"
    assert share_url in listed.content.decode()
    opened = Client().get(reverse("open-share", args=[link.token]), {"next": step})
    assert opened["Location"] == step


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/",
        "//evil.example/runs/",
        "/runs/other/",
        "/runs/{pid}/../../admin/",
        "/runs/{pid}/%2e%2e/%2e%2e/tokens/",
        "/runs/{pid}/share/",
        "/tokens/",
    ],
)
def test_a_share_link_never_redirects_off_the_run(alice_client, private_run, target):
    link = _create(alice_client, private_run)
    target = target.format(pid=private_run.public_id)
    opened = Client().get(reverse("open-share", args=[link.token]), {"next": target})
    assert opened["Location"] == f"/runs/{private_run.public_id}/"


def test_only_the_owner_shares_and_revokes(private_run, alice_client, bob):
    link = _create(alice_client, private_run)
    client = Client()
    client.force_login(bob)
    assert client.get(reverse("share", args=[private_run.public_id])).status_code == 404
    assert client.post(reverse("share", args=[private_run.public_id])).status_code == 404
    revoke = reverse("revoke-share", args=[private_run.public_id, link.token])
    assert client.post(revoke).status_code == 404
    link.refresh_from_db()
    assert link.revoked is None
    assert ShareLink.objects.count() == 1


def test_the_owner_sees_share_links_on_the_dashboard_and_the_share_page(alice_client, private_run):
    dashboard = alice_client.get(reverse("run", args=[private_run.public_id]), {"budget": "8000"})
    html = dashboard.content.decode()
    assert f'href="/runs/{private_run.public_id}/share/"' in html
    assert f"/runs/{private_run.public_id}/share/?next=%2Fruns%2F" in html  # per problem
    assert "%26amp%3B" not in html
    _create(alice_client, private_run)
    page = alice_client.get(reverse("share", args=[private_run.public_id])).content.decode()
    assert "http://testserver/s/" in page and "Revoke" in page


def test_a_run_shared_alone_shows_nothing_of_its_collection(alice, alice_client):
    from contextsim.ingest.base import ParsedFile
    from contextsim.systems.seed.demo import demo_runs
    from webapp.models import Visibility
    from webapp.store.actions.saving import do_save_runs

    runs = do_save_runs(
        ParsedFile("demo", demo_runs("subagents", chapter_chars=2_000)[:3]),
        owner=alice,
        visibility=Visibility.PRIVATE,
        estimators=("chars4",),
    )
    shared = runs[1]
    assert shared.collection is not None
    own = alice_client.get(reverse("run", args=[shared.public_id])).content.decode()
    assert runs[2].title in own and 'class="siblings"' in own
    link = _create(alice_client, shared)
    visitor = Client()
    visitor.get(reverse("open-share", args=[link.token]))
    for name in ("run", "run-requests"):
        page = visitor.get(reverse(name, args=[shared.public_id])).content.decode()
        assert 'class="siblings"' not in page
        assert runs[0].title not in page and runs[2].title not in page
    estimators = visitor.get(reverse("run-estimators", args=[shared.public_id])).content.decode()
    assert "Fit per-script rates on this run" not in estimators


def test_the_api_page_lists_active_share_links_with_revoke(alice_client, private_run, bob):
    link = _create(alice_client, private_run)
    page = alice_client.get(reverse("tokens")).content.decode()
    assert f"/s/{link.token}/" in page and private_run.title in page
    assert reverse("revoke-share", args=[private_run.public_id, link.token]) in page
    other = Client()
    other.force_login(bob)
    assert link.token not in other.get(reverse("tokens")).content.decode()
    alice_client.post(reverse("revoke-share", args=[private_run.public_id, link.token]))
    assert link.token not in alice_client.get(reverse("tokens")).content.decode()
