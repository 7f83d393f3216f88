"""At 390 px (a phone): no page is wider than the screen, and the charts' axis titles sit
on neither their tick labels nor the legend, as at 1280 px."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE = """() => [...document.querySelectorAll('body *')]
  .filter(e => {
    // Inside a scrolling box (a wide table), an element may extend past the screen.
    for (let p = e.parentElement; p; p = p.parentElement) {
      const scrolls = getComputedStyle(p).overflowX;
      if (scrolls === 'auto' || scrolls === 'scroll') return false;
    }
    return e.getBoundingClientRect().right > innerWidth + 1;
  })
  .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
    + ' ' + Math.round(e.getBoundingClientRect().right))"""

OVERLAPS = """(selector) => {
  const box = document.querySelector(selector);
  const rect = (e) => e.getBoundingClientRect();
  const meet = (a, b) =>
    a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const xtitle = box.querySelector('.xtitle'), ytitle = box.querySelector('.ytitle');
  const legend = box.querySelector('.legend .bg') || box.querySelector('.legend');
  const yticks = [...box.querySelectorAll('.ytick text')];
  const found = [];
  if (!xtitle || !ytitle || !legend) found.push('missing title or legend');
  else {
    if (meet(rect(xtitle), rect(legend))) found.push('x title on the legend');
    if (yticks.some(t => meet(rect(t), rect(ytitle)))) found.push('y title on its tick labels');
  }
  return found;
}"""


def _narrow(page, chromium, width=390):
    context = chromium.new_context(viewport={"width": width, "height": 800})
    narrow = context.new_page()
    narrow.set_default_timeout(15_000)
    return context, narrow


@pytest.mark.parametrize("width", [390, 1280])
def test_the_dashboard_and_collection_charts_keep_titles_off_labels_and_legend(
    page, chromium, fleet, width
):
    context, narrow = _narrow(page, chromium, width)
    run = fleet[0]
    query = "?estimator=chars4"
    narrow.goto(f"{page.base}/runs/{run.public_id}/{query}")
    narrow.locator("#chart[data-drawn='1']").wait_for()
    assert narrow.evaluate(OVERLAPS, "#chart") == []
    narrow.goto(f"{page.base}/collections/{run.collection.public_id}/{query}")
    narrow.locator("#fleet .main-svg").first.wait_for()
    assert narrow.evaluate(OVERLAPS, "#fleet .js-plotly-plot") == []
    context.close()


def test_no_page_is_wider_than_a_phone(page, chromium, fleet):
    context, narrow = _narrow(page, chromium)
    run = fleet[0]
    pages = [
        "/",
        "/upload/",
        "/sweeps/",
        "/estimators/",
        "/tokens/",
        f"/runs/{run.public_id}/?estimator=chars4",
        f"/runs/{run.public_id}/steps/3/?estimator=chars4",
        f"/runs/{run.public_id}/ledger/?estimator=chars4",
        f"/runs/{run.public_id}/requests/",
        f"/collections/{run.collection.public_id}/?estimator=chars4",
    ]
    for path in pages:
        narrow.goto(page.base + path)
        narrow.wait_for_load_state("networkidle")
        assert narrow.evaluate("document.documentElement.scrollWidth") <= 390, path
        assert narrow.evaluate(WIDE) == [], path
    context.close()


def test_every_page_works_under_the_content_security_policy(page, fleet):
    """The policy forbids inline script and eval: no page may trip it, and the charts and
    htmx still work (a control change redraws in place)."""
    page.add_init_script(
        "window.__csp = []; document.addEventListener('securitypolicyviolation',"
        " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
    )
    run = fleet[0]
    for path in (
        "/",
        "/upload/",
        "/estimators/",
        "/tokens/",
        f"/runs/{run.public_id}/steps/3/?estimator=chars4",
        f"/runs/{run.public_id}/ledger/?estimator=chars4",
        f"/runs/{run.public_id}/estimators/",
        f"/collections/{run.collection.public_id}/?estimator=chars4",
    ):
        response = page.goto(page.base + path)
        assert "script-src 'self'" in response.headers["content-security-policy"]
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__csp") == [], path
    page.goto(f"{page.base}/runs/{run.public_id}/?estimator=chars4")
    page.locator("#chart[data-drawn='1']").wait_for()
    page.evaluate("document.getElementById('chart').dataset.drawn = ''")
    page.fill("input[name=budget]", "9000")
    page.locator("input[name=budget]").dispatch_event("change")
    page.wait_for_url(lambda url: "budget=9000" in url)
    page.locator("#chart[data-drawn='1']").wait_for()
    assert page.locator("#chart .legend").count() == 1
    assert page.evaluate("window.__csp") == []
