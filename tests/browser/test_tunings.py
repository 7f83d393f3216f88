"""A tuning's page in Chromium: each mechanism's frontier chart is drawn with the
recommended setting marked, the page passes axe-core and fits a 390 px phone, and the
form started from a run's page starts a tuning."""

from __future__ import annotations

import pytest

from tests.browser.conftest import axe_violations, wait_until
from tests.conftest import corpus_files

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SESSION = corpus_files("claude_code", "codemie_session-624a*.jsonl")


@pytest.mark.parametrize("path", SESSION)
def test_the_tuning_page_draws_its_frontiers(page, chromium, axe_source, path):
    from django.contrib.auth.models import User

    from tests.web.test_import_service import import_bytes
    from webapp.models import Run
    from webapp.tuning import services

    owner, _ = User.objects.get_or_create(username="local")
    import_bytes(owner, path.name, path.read_bytes())
    main = Run.objects.get(owner=owner, compaction_request=False, subagent=False)
    tuning = services.create_tuning(
        owner, [main], estimator="chars4", only=["claude-code-auto-compact", "clear-tool-uses"]
    )
    services.run_cells(list(tuning.cells.values_list("pk", flat=True)))
    for width in (1280, 390):
        context = chromium.new_context(viewport={"width": width, "height": 800}, bypass_csp=True)
        shown = context.new_page()
        shown.set_default_timeout(15_000)
        try:
            shown.goto(f"{page.base}/tunings/{tuning.public_id}/")
            for name in ("claude-code-auto-compact", "clear-tool-uses"):
                wait_until(
                    shown, f"document.querySelector('[data-figure=frontier-{name}]').dataset.drawn"
                )
                # The recommended setting is a trace of its own (a star), and its
                # setting is on the page.
                legend = shown.locator(f"#mechanism-{name} .legend").text_content() or ""
                assert "recommended" in legend
            assert (
                shown.locator("#mechanism-claude-code-auto-compact").get_by_text("window=").count()
                >= 1
            )
            wide = shown.evaluate("() => document.documentElement.scrollWidth")
            assert wide <= width + 1, f"the page is {wide} px wide at {width}"
            assert axe_violations(shown, axe_source) == []
        finally:
            context.close()
    # From the run's page: its link opens the form, which starts a tuning.
    context = chromium.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    shown = context.new_page()
    try:
        shown.goto(f"{page.base}/runs/{main.public_id}/")
        shown.get_by_role("link", name="tune its settings").click()
        shown.wait_for_url("**/tunings/new/?run=*")
        shown.get_by_label("Estimator").select_option("chars4")
        shown.get_by_role("button", name="Start the tuning").click()
        shown.wait_for_url("**/tunings/*/")
        assert shown.locator("#tuning-progress").count() == 1
    finally:
        context.close()


@pytest.mark.parametrize("path", SESSION)
def test_the_form_offers_other_mechanisms_on_a_phone(page, chromium, axe_source, path):
    """The form's "other mechanisms" opens, passes axe-core and fits 390 px; one chosen
    there is tried on the run although its agent does not have it."""
    from django.contrib.auth.models import User

    from tests.web.test_import_service import import_bytes
    from webapp.models import Run, Tuning

    owner, _ = User.objects.get_or_create(username="local")
    import_bytes(owner, path.name, path.read_bytes())
    main = Run.objects.get(owner=owner, compaction_request=False, subagent=False)
    context = chromium.new_context(viewport={"width": 390, "height": 800}, bypass_csp=True)
    shown = context.new_page()
    shown.set_default_timeout(15_000)
    try:
        shown.goto(f"{page.base}/tunings/new/?run={main.public_id}")
        shown.get_by_text("Other mechanisms, tried on every run").click()
        other = shown.get_by_label("Codex's model_auto_compact_token_limit")
        assert other.is_visible() and not other.is_checked()
        shown.get_by_text("Any policy, over values you give").click()
        assert shown.get_by_label("Values to search, a parameter a line").is_visible()
        wide = shown.evaluate("() => document.documentElement.scrollWidth")
        assert wide <= 391, f"the form is {wide} px wide at 390"
        assert axe_violations(shown, axe_source) == []
        checked = shown.locator("input[name=mechanism]:checked")
        for value in checked.evaluate_all("boxes => boxes.map(b => b.value)"):
            shown.locator(f"input[name=mechanism][value='{value}']").uncheck()
        other.check()
        shown.get_by_label("Estimator").select_option("chars4")
        shown.get_by_role("button", name="Start the tuning").click()
        shown.wait_for_url("**/tunings/*/")
        tuning = Tuning.objects.get(owner=owner)
        assert list(tuning.spaces) == ["codex-auto-compact"]
        assert list(tuning.cells.values_list("run_id", flat=True)) == [main.pk]
    finally:
        context.close()
