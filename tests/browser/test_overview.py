"""The overview in Chromium: the chart is drawn, a click on a day opens the sessions of
that day, the page passes axe-core, and it fits a 390 px phone."""

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

    owner, _ = User.objects.get_or_create(username="local")
    import_bytes(owner, path.name, path.read_bytes())
    for width in (1280, 390):
        context = chromium.new_context(viewport={"width": width, "height": 800}, bypass_csp=True)
        shown = context.new_page()
        shown.set_default_timeout(15_000)
        try:
            shown.goto(f"{page.base}/overview/?by=day")
            wait_until(shown, "document.querySelector('[data-figure=overview-data]').dataset.drawn")
            assert shown.locator("#overview-total").inner_text().count("$") == 1
            wide = shown.evaluate("() => document.documentElement.scrollWidth")
            assert wide <= width + 1, f"the page is {wide} px wide at {width}"
            assert axe_violations(shown, axe_source) == []
            shown.locator("#overview-table tbody a").first.click()
            shown.wait_for_url("**/overview/?*by=session*")
            assert shown.locator("#overview-table tbody tr").count() >= 1
        finally:
            context.close()
