"""Single-user mode only where it is safe: a reverse proxy forwarding a public host gets
the sign-in page; share grants rotate the session key and end at a sign-in."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.web.test_dashboard import native_run
from tests.web.test_import_service import import_bytes
from webapp.access.services.sharing import create_link
from webapp.management.commands.serve import public_hosts
from webapp.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def implied(settings):
    """As `serve` on 127.0.0.1 sets it: implied, not configured."""
    settings.LOCAL_USER, settings.LOCAL_USER_EXPLICIT = "local", False
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1", "contextsim.example.org"]


def _tokens_page(**headers):
    return Client().get(reverse("tokens"), **headers)


def test_a_plainly_local_request_is_the_local_user(implied):
    response = _tokens_page(HTTP_HOST="127.0.0.1:8000", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200 and "local" in response.content.decode()


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_HOST": "contextsim.example.org", "REMOTE_ADDR": "127.0.0.1"},
        {"HTTP_HOST": "localhost", "REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "8.8.8.8"},
        {"HTTP_HOST": "localhost", "REMOTE_ADDR": "127.0.0.1", "HTTP_FORWARDED": "for=1.2.3.4"},
        {"HTTP_HOST": "localhost", "REMOTE_ADDR": "10.0.0.7"},
    ],
)
def test_a_proxied_or_remote_visitor_gets_the_sign_in_page(implied, headers):
    response = _tokens_page(**headers)
    assert response.status_code == 302 and reverse("login") in response["Location"]
    assert not Run.objects.exists()


def test_configured_single_user_mode_holds_for_every_host(settings):
    settings.LOCAL_USER, settings.LOCAL_USER_EXPLICIT = "solo", True
    settings.ALLOWED_HOSTS = ["contextsim.example.org"]
    response = _tokens_page(HTTP_HOST="contextsim.example.org", REMOTE_ADDR="10.1.1.1")
    assert response.status_code == 200


def test_serve_implies_single_user_mode_only_without_a_public_host():
    assert public_hosts(["localhost", "127.0.0.1", "[::1]"]) == []
    assert public_hosts(["localhost", "contextsim.example.org"]) == ["contextsim.example.org"]
    assert public_hosts([".example.org"]) == [".example.org"]


def test_a_share_grant_gets_a_new_session_key_and_ends_at_sign_in(alice, bob):
    import_bytes(alice, "a.json", native_run(rounds=2))
    run = Run.objects.get(title="dash")
    link = create_link(run, alice)
    visitor = Client()
    visitor.get(reverse("login"))
    planted = visitor.session.session_key
    visitor.get(reverse("open-share", args=[link.token]))
    assert visitor.session.session_key != planted
    assert visitor.get(reverse("run", args=[run.public_id])).status_code == 200
    # Whoever had the planted id sees nothing.
    attacker = Client()
    attacker.cookies["sessionid"] = planted or ""
    assert attacker.get(reverse("run", args=[run.public_id])).status_code == 404
    # A sign-in in that browser starts without the grants of the visitor before.
    visitor.force_login(bob)
    assert visitor.get(reverse("run", args=[run.public_id])).status_code == 404


def test_private_pages_and_api_answers_are_never_stored(alice_client, alice):
    assert alice_client.get(reverse("tokens"))["Cache-Control"] == "no-store"
    assert alice_client.get(reverse("runs"))["Cache-Control"] == "no-store"
    assert Client().get("/api/runs/x/")["Cache-Control"] == "no-store"
    assert "no-store" not in Client().get(reverse("runs")).get("Cache-Control", "")


def test_the_documented_production_settings_pass_check_deploy(tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    # The browser tests' DJANGO_ALLOW_ASYNC_UNSAFE is theirs, not a deployment's.
    inherited = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "CONTEXTSIM_HTTPS": "1",
        "SECRET_KEY": "k" * 20 + "-a-long-random-production-secret-" + "z" * 20,
        "DEBUG": "0",
        "ALLOWED_HOSTS": "contextsim.example.org",
        "CONTEXTSIM_DATA_DIR": str(tmp_path),
        "CONTEXTSIM_LOCAL_USER": "",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_behind_tls_a_share_link_says_https(settings, alice_client, alice):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ALLOWED_HOSTS = ["contextsim.example.org"]
    import_bytes(alice, "a.json", native_run(rounds=2))
    run = Run.objects.get(title="dash")
    link = create_link(run, alice)
    page = alice_client.get(
        reverse("share", args=[run.public_id]),
        HTTP_X_FORWARDED_PROTO="https",
        HTTP_HOST="contextsim.example.org",
    ).content.decode()
    assert f"https://contextsim.example.org/s/{link.token}/" in page
