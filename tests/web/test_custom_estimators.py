"""Fitting a custom estimator from a run, and using it on the dashboard."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from tests.web.test_import_service import import_bytes
from webapp.models import CustomRates, Run

pytestmark = pytest.mark.django_db

RUSSIAN = "Съешь же ещё этих мягких французских булок, да выпей чаю. " * 200


@pytest.fixture
def run(alice) -> Run:
    messages = [{"role": "user", "content": "read the chapters"}]
    total = 10
    for i in range(6):
        total += 1_000 + 4 * 2
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_call", "id": f"c{i}", "name": "read", "arguments": {}}],
                "usage": {"input_tokens": total},
            }
        )
        messages.append(
            {
                "role": "tool",
                "content": [{"type": "tool_result", "call_id": f"c{i}", "text": RUSSIAN}],
            }
        )
        total += 2_600
    doc = {"contextsim": 1, "runs": [{"title": "ru", "messages": messages}]}
    import_bytes(alice, "ru.json", json.dumps(doc).encode())
    return Run.objects.get(title="ru")


def test_fitting_saves_a_custom_estimator_with_errors_before_and_after(alice_client, run):
    response = alice_client.post(reverse("fit-custom", args=[run.public_id]))
    assert response.status_code == 302
    fitted = CustomRates.objects.get()
    assert fitted.requests == 6
    assert fitted.error_after < fitted.error_before["chars4"]
    page = alice_client.get(reverse("run-estimators", args=[run.public_id])).content.decode()
    assert fitted.estimator_name in page


def test_the_dashboard_offers_and_uses_the_owners_custom_estimator(alice_client, bob, run):
    alice_client.post(reverse("fit-custom", args=[run.public_id]))
    name = CustomRates.objects.get().estimator_name
    url = reverse("run", args=[run.public_id])
    page = alice_client.get(url, {"estimator": name})
    assert page.status_code == 200 and f'value="{name}" selected' in page.content.decode()
    stranger = Client()
    stranger.force_login(bob)
    assert f'value="{name}"' not in stranger.get(url).content.decode()


def test_a_run_without_enough_measured_requests_explains_why(alice, alice_client):
    doc = {
        "contextsim": 1,
        "runs": [
            {
                "title": "short",
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "yo"},
                ],
            }
        ],
    }
    import_bytes(alice, "s.json", json.dumps(doc).encode())
    run = Run.objects.get(title="short")
    response = alice_client.post(reverse("fit-custom", args=[run.public_id]), follow=True)
    assert "at least 3 are needed" in response.content.decode()
    assert CustomRates.objects.count() == 0
