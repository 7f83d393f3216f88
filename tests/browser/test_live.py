"""A live run in real Chromium: an open dashboard redraws, with no reload, as messages
are streamed into the run through the API."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.browser.conftest import wait_until
from tests.web.test_streaming import HEADER, _round
from webapp.access.services.tokens import create_token

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _steps(page) -> int:
    return int(page.evaluate("document.getElementById('chart').data[0].x.length"))


def test_an_open_dashboard_grows_as_messages_are_streamed(page):
    from django.contrib.auth.models import User

    owner, _ = User.objects.get_or_create(username="local")
    key = create_token(owner, "agent")[1]
    api = Client(headers={"Authorization": f"Bearer {key}"})
    created = api.post("/api/runs/", json.dumps(HEADER), content_type="application/json")
    run_id = created.json()["runs"][0]["id"]
    first = [{"role": "user", "content": "read every chapter"}, *_round(0), *_round(1)]
    url = f"/api/runs/{run_id}/messages/"
    api.post(url, json.dumps({"messages": first}), content_type="application/json")
    page.goto(f"{page.base}/runs/{run_id}/?budget=5000")
    page.locator("#chart[data-drawn='1']").wait_for()
    assert _steps(page) == 3
    assert "2 requests" in page.locator("#page-head").inner_text()
    page.evaluate("window.__same_page = true")
    more = [m for i in range(2, 6) for m in _round(i)]
    api.post(url, json.dumps({"messages": more}), content_type="application/json")
    # The new chart is drawn once htmx has settled the swap: until then it has no data.
    wait_until(page, "((document.getElementById('chart').data || [])[0] || {x: []}).x.length === 7")
    assert page.evaluate("window.__same_page") is True  # redrawn in place, not reloaded
    assert "13 messages so far" in page.locator("#live").inner_text()
    assert page.url.endswith(f"/runs/{run_id}/?budget=5000")
    # The title line counts the requests that arrived, not those of the first load.
    from webapp.models import Run

    count = Run.objects.get(public_id=run_id).request_count
    assert count > 2
    wait_until(page, f"document.getElementById('page-head').innerText.includes('{count} requests')")
    # Typing a budget moves its slider too, before any reload.
    page.fill("input[name=budget]", "150000")
    slider = page.locator("input[name=budget_slider]")
    assert slider.input_value() == "150000"
    page.wait_for_url(lambda url: "budget=150000" in url)
    assert page.locator("input[name=budget_slider]").input_value() == "150000"
