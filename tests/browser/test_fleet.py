"""A collection in real Chromium: a control change redraws every run's line in place and
pushes the URL; a rejected run's link opens the step where it was rejected."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_policy_change_redraws_the_fleet_and_a_rejection_opens_its_step(page, fleet):
    collection = fleet[0].collection
    page.goto(
        f"{page.base}/collections/{collection.public_id}/?policy=mythex&budget=10000&hard_limit=40000&estimator=chars4"
    )
    page.locator("[data-figure='fleet-data'] .main-svg").first.wait_for()
    assert "3 of 3" in page.locator("dl.cards").inner_text()
    page.evaluate("window.__same_page = true")
    page.select_option("select[name=policy]", "turns")
    page.wait_for_url(re.compile(r"policy=turns"))
    page.locator("dl.cards", has_text="0 of 3").wait_for()
    assert page.evaluate("window.__same_page") is True
    # The new chart is drawn once htmx has settled the swap.
    wait_until(page, "!!document.querySelector('[data-figure=fleet-data]').data")
    lines = page.evaluate("document.querySelector('[data-figure=fleet-data]').data.length")
    assert lines >= 3
    page.locator("a", has_text="no: rejected at step").first.click()
    page.wait_for_url(
        re.compile(r"/steps/\d+/\?policy=turns&budget=10000&hard_limit=40000&estimator=chars4")
    )
    assert "rejected" in page.locator("main").inner_text()


def test_markup_in_a_run_title_is_shown_as_text_in_the_chart(page, fleet):
    from webapp.models import Run

    evil = '<a href="https://evil.example/">open</a><b>bold</b>'
    Run.objects.filter(pk=fleet[0].pk).update(title=evil)
    collection = fleet[0].collection
    page.goto(f"{page.base}/collections/{collection.public_id}/?estimator=chars4")
    chart = page.locator("[data-figure='fleet-data']")
    chart.locator(".main-svg").first.wait_for()
    assert chart.locator("a").count() == 0 and chart.locator("b").count() == 0
    assert '<a href="https://evil.example/">' in chart.locator(".legend").text_content()


def test_the_fleet_chart_after_a_policy_change_looks_like_a_fresh_load(page, fleet, chromium):
    from tests.browser.test_dashboard import chart_image, differing_share

    collection = fleet[0].collection
    query = "?policy=mythex&budget=10000&hard_limit=40000&estimator=chars4"
    page.goto(f"{page.base}/collections/{collection.public_id}/{query}")
    page.locator("[data-figure='fleet-data'] .main-svg").first.wait_for()
    page.select_option("select[name=policy]", "turns")
    page.wait_for_url(re.compile(r"policy=turns"))
    page.locator("dl.cards", has_text="0 of 3").wait_for()
    wait_until(page, "!!document.querySelector('[data-figure=fleet-data]').data")
    page.wait_for_timeout(500)
    after = chart_image(page, "[data-figure='fleet-data']")
    legend = page.locator("[data-figure='fleet-data'] .legendtext").all_text_contents()
    assert len(legend) >= 3
    other = chromium.new_context(viewport={"width": 1280, "height": 800})
    fresh = other.new_page()
    fresh.goto(page.url)
    fresh.locator("[data-figure='fleet-data'] .main-svg").first.wait_for()
    fresh.wait_for_timeout(300)
    before = chart_image(fresh, "[data-figure='fleet-data']")
    other.close()
    assert differing_share(after, before) < 0.01


def test_the_frontier_is_drawn_when_scrolled_to_with_both_policies(page, fleet):
    collection = fleet[0].collection
    page.goto(
        f"{page.base}/collections/{collection.public_id}/?policy=mythex&compare=turns&budget=10000&hard_limit=40000&estimator=chars4"
    )
    page.locator("#frontier").scroll_into_view_if_needed()
    chart = page.locator("[data-figure='frontier-cost']")
    chart.locator(".main-svg").first.wait_for()
    assert sorted(chart.locator(".legend .legendtext").all_text_contents()) == ["mythex", "turns"]
    assert chart.locator(".scatterlayer .trace").count() == 2
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
