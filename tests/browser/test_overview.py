"""The overview in Chromium: the charts are drawn (cost, and where the context went), a
click on a day or a tool opens the sessions behind it, the page passes axe-core, and it
fits a 390 px phone."""

from __future__ import annotations

import pytest

from tests.browser.conftest import axe_violations, wait_until
from tests.conftest import corpus_files

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SESSION = corpus_files("claude_code", "codemie_session-624a*.jsonl")


@pytest.mark.parametrize("path", SESSION)
def test_the_overview_draws_and_each_day_opens_its_sessions(page, chromium, axe_source, path):
    from django.contrib.auth.models import User

    from tests.web.test_import_service import import_bytes
    from webapp.store.actions.derivation import do_derive_pending

    owner, _ = User.objects.get_or_create(username="local")
    import_bytes(owner, path.name, path.read_bytes())
    do_derive_pending(limit=100)  # where the context went: each run's shares stored
    for width in (1280, 390):
        context = chromium.new_context(viewport={"width": width, "height": 800}, bypass_csp=True)
        shown = context.new_page()
        shown.set_default_timeout(15_000)
        try:
            shown.goto(f"{page.base}/overview/?by=day")
            wait_until(shown, "document.querySelector('[data-figure=overview-data]').dataset.drawn")
            assert shown.locator("#overview-total").inner_text().count("$") == 1
            # Where the context went: its bars drawn, one per part of the table.
            wait_until(
                shown, "document.querySelector('[data-figure=overview-parts]').dataset.drawn"
            )
            parts = shown.locator("#overview-parts-table tbody tr").count()
            assert parts >= 3
            assert shown.locator("[data-figure=overview-parts] .bars path").count() == parts
            assert shown.locator("#overview-tools tbody a").count() >= 1
            wide = shown.evaluate("() => document.documentElement.scrollWidth")
            assert wide <= width + 1, f"the page is {wide} px wide at {width}"
            assert axe_violations(shown, axe_source) == []
            shown.locator("#overview-table tbody a").first.click()
            shown.wait_for_url("**/overview/?*by=session*")
            assert shown.locator("#overview-table tbody tr").count() >= 1
            # A tool opens the sessions that used it, its filter shown.
            shown.go_back()
            tool = shown.locator("#overview-tools tbody a").first
            name = tool.inner_text()
            tool.click()
            shown.wait_for_url("**/overview/?*tool=*")
            assert shown.locator("input[name=tool]").input_value() == name
            assert shown.locator("#overview-table tbody tr").count() >= 1
        finally:
            context.close()
