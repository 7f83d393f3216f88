"""The estimator playground in real Chromium: paste text, get the table and the
highlighted scripts in place."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_pasting_text_shows_scripts_and_estimates_in_place(page):
    page.goto(page.base + "/estimators/")
    page.fill("textarea[name=text]", "Hello мир, 世界 and Ελλάδα! 🙂 <script>alert(1)</script>")
    page.select_option("select[name=reference]", "o200k")
    page.click("button[type=submit]")
    page.locator("table.scripts").wait_for()
    assert page.url.endswith("/estimators/")
    table = page.locator("table.scripts").inner_text()
    assert "Cyrillic" in table and "Han" in table and "Greek" in table
    assert page.locator("pre.highlighted .s-cyrillic").first.inner_text() == "мир"
    # The pasted markup is shown as text, never run.
    assert "<script>alert(1)</script>" in page.locator("pre.highlighted").inner_text()
    assert page.evaluate("document.querySelectorAll('pre.highlighted script').length") == 0
