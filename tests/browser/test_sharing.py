"""Sharing a problem step in real Chromium: the owner makes a link from the problem
list; a colleague in a fresh browser opens it and lands on that step, read-only."""

from __future__ import annotations

import re

import pytest

from tests.browser.test_dashboard import open_dashboard

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_shared_problem_step_opens_in_a_fresh_browser(page, run, chromium, settings):
    run.visibility = "private"
    run.save(update_fields=["visibility"])
    open_dashboard(page, run, "?budget=8000")
    page.locator("ul.problem-list a.share-link").first.click()
    page.click("text=Create a share link")
    url = page.locator("table.shares code").first.inner_text()
    assert re.search(r"/s/[\w-]+/\?next=%2Fruns%2F", url)
    # From here on visitors are not signed in as the owner (the owner's session stays).
    settings.LOCAL_USER = ""
    other = chromium.new_context(viewport={"width": 1280, "height": 800})
    colleague = other.new_page()
    colleague.goto(url)
    colleague.wait_for_url(re.compile(rf"/runs/{run.public_id}/steps/\d+/\?budget=8000$"))
    assert "share" not in colleague.locator(".step-nav, .page-head").first.inner_text().lower()
    page.click("button:has-text('Revoke')")
    page.locator("tr.revoked").wait_for()
    response = colleague.reload()
    assert response is not None and response.status == 404
    assert "revoked" in colleague.locator("main").inner_text()
    other.close()
