"""Rate limits: sign-in attempts and bad API keys per address answer 429 with
Retry-After once over the limit; a good key from a limited address is refused too."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from webapp.access.services.tokens import create_token

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_counts(settings):
    settings.RATE_SIGN_IN = "5/m"
    settings.RATE_BAD_API_KEYS = "5/m"
    cache.clear()
    yield
    cache.clear()


def test_sign_in_attempts_over_the_limit_get_429_with_retry_after(alice):
    client = Client()
    answers = [
        client.post(reverse("login"), {"username": "alice", "password": f"wrong{i}"}).status_code
        for i in range(8)
    ]
    assert answers[:5] == [200] * 5 and set(answers[5:]) == {429}
    limited = client.post(reverse("login"), {"username": "alice", "password": "pw-alice-123"})
    assert limited.status_code == 429 and limited["Retry-After"] == "60"


def test_guessing_one_username_from_many_addresses_is_limited_too(alice):
    answers = [
        Client(REMOTE_ADDR=f"10.0.0.{i}")
        .post(reverse("login"), {"username": "alice", "password": "nope"})
        .status_code
        for i in range(7)
    ]
    assert answers[-1] == 429


def test_bad_api_keys_over_the_limit_get_429_and_then_even_a_good_key(alice):
    good = create_token(alice, "agent")[1]
    for i in range(5):
        bad = Client(headers={"Authorization": f"Bearer wrong{i}"}).get("/api/runs/none/")
        assert bad.status_code == 401
    limited = Client(headers={"Authorization": "Bearer wrong"}).get("/api/runs/none/")
    assert limited.status_code == 429 and limited["Retry-After"] == "60"
    again = Client(headers={"Authorization": f"Bearer {good}"}).get("/api/runs/none/")
    assert again.status_code == 429
    other = Client(REMOTE_ADDR="10.9.9.9", headers={"Authorization": f"Bearer {good}"})
    assert other.get("/api/runs/none/").status_code == 404  # another address is not limited


def test_with_their_redis_down_the_limits_let_requests_through_and_say_so(alice, settings, caplog):
    # A closed port: every count fails at once.
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1},
        }
    }
    client = Client()
    key = create_token(alice, "agent")[1]
    body = json.dumps({"contextsim": 1, "runs": [{"title": "t", "messages": []}]})
    bad = client.post(
        "/api/runs/", body, content_type="application/json", headers={"Authorization": "Bearer x"}
    )
    good = client.post(
        "/api/runs/",
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    signed = client.post("/login/", {"username": "alice", "password": "wrong"})
    assert (bad.status_code, good.status_code) == (401, 201)
    assert signed.status_code == 200  # the sign-in form again, not a 500
    assert any(
        "redis" in r.name.lower() or "redis" in r.getMessage().lower() for r in caplog.records
    )
