"""The dashboard in real Chromium: controls update in place and push the URL, a copied
URL reproduces the view, chart clicks and keys open steps, two policies compare."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_dashboard(page, run, query=""):
    page.goto(f"{page.base}/runs/{run.public_id}/{query}")
    page.locator("#chart[data-drawn='1']").wait_for()


def cards(page):
    return page.locator("dl.cards").inner_text()


def test_moving_the_budget_redraws_in_place_and_the_url_reproduces_the_view(page, run, chromium):
    open_dashboard(page, run)
    before = cards(page)
    # The slider drives the number field it stands for, a 200th of its range a step.
    slider = page.locator("input[name=budget_slider]")
    step = int(slider.get_attribute("step"))
    assert step * 150 <= int(slider.get_attribute("max")) <= step * 250
    target = str(3 * step)
    slider.fill(target)
    assert page.locator("input[name=budget]").input_value() == target
    page.wait_for_url(re.compile(rf"\?budget={target}$"))
    page.locator("#chart[data-drawn='1']").wait_for()
    before = cards(page)
    page.evaluate("document.getElementById('chart').dataset.drawn = ''")
    page.fill("input[name=budget]", "8000")
    page.locator("input[name=budget]").dispatch_event("change")
    page.wait_for_url(re.compile(r"\?budget=8000$"))
    page.locator("#chart[data-drawn='1']").wait_for()
    after = cards(page)
    assert after != before
    # The same URL in a fresh browser context shows the same figures.
    other = chromium.new_context(viewport={"width": 1280, "height": 800})
    fresh = other.new_page()
    fresh.goto(page.url)
    fresh.locator("#chart[data-drawn='1']").wait_for()
    assert cards(fresh) == after
    other.close()


def test_clicking_a_problem_marker_opens_the_step_inspector(page, run):
    open_dashboard(page, run, "?policy=mythex&budget=8000")
    marker = page.evaluate(
        """() => {
          const box = document.getElementById('chart');
          box.scrollIntoView({block: 'center'});
          const trace = box.data.findIndex(t => t.name === 'problems');
          const last = box.data[trace].x.length - 1;  // off the axis, where a click lands
          const step = box.data[trace].x[last];
          const xa = box._fullLayout.xaxis, ya = box._fullLayout.yaxis;
          const rect = box.querySelector('.nsewdrag').getBoundingClientRect();
          return {step, x: rect.left + xa.l2p(step), y: rect.top + ya.l2p(box.data[trace].y[last])};
        }"""
    )
    # Plotly picks the clicked point from the last hover: hover first, then click.
    page.mouse.move(marker["x"], marker["y"])
    page.wait_for_timeout(300)
    page.mouse.click(marker["x"], marker["y"])
    page.wait_for_url(re.compile(rf"/steps/{marker['step']}/\?policy=mythex&budget=8000$"))
    assert page.locator("h1").inner_text().startswith(f"Step {marker['step']}")


def test_keys_move_between_steps_and_problems(page, run):
    page.goto(f"{page.base}/runs/{run.public_id}/steps/5/?budget=8000")
    page.keyboard.press("j")
    page.wait_for_url(re.compile(r"/steps/6/"))
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(re.compile(r"/steps/5/"))
    target = page.locator("#next-problem").get_attribute("href")
    page.keyboard.press("n")
    page.wait_for_url(re.compile(re.escape(target)))


def test_comparing_two_policies_shows_both(page, run):
    open_dashboard(page, run, "?budget=8000")
    page.select_option("select[name=compare]", "none")
    page.wait_for_url(re.compile(r"compare=none"))
    page.locator("text=sent by none").first.wait_for()
    assert "vs" in cards(page)
    names = page.evaluate("document.getElementById('chart').data.map(t => t.name)")
    assert "sent by none" in names


def test_changing_the_policy_replaces_its_parameter_controls(page, run):
    open_dashboard(page, run, "?policy=mythex")
    assert page.locator("#policy-params input[name=batch]").count() == 1
    page.select_option("select[name=policy]", "turns")
    page.wait_for_url(re.compile(r"policy=turns"))
    page.locator("#policy-params input[name=batch]").wait_for(state="detached")


def chart_image(page, selector="#chart"):
    from io import BytesIO

    from PIL import Image

    page.mouse.move(0, 0)  # no hover: the mode bar hidden, no tooltip
    page.wait_for_timeout(300)
    return Image.open(BytesIO(page.locator(selector).screenshot())).convert("RGB")


def differing_share(a, b) -> float:
    from PIL import ImageChops

    if a.size != b.size:
        return 1.0
    diff = ImageChops.difference(a, b).convert("L").point(lambda v: 255 if v > 40 else 0)
    return sum(diff.histogram()[1:]) / (a.size[0] * a.size[1])


def test_the_chart_after_an_in_place_change_looks_like_a_fresh_load_of_its_url(page, run, chromium):
    open_dashboard(page, run, "?policy=mythex")
    page.evaluate("document.getElementById('chart').dataset.drawn = ''")
    page.fill("input[name=budget]", "8000")
    page.locator("input[name=budget]").dispatch_event("change")
    page.wait_for_url(re.compile(r"budget=8000"))
    page.locator("#chart[data-drawn='1']").wait_for()
    after = chart_image(page)
    legend = page.locator("#chart .legendtext").all_text_contents()
    assert "full history (none)" in legend
    # plotly.js's styles hang on the class it gives the chart: it must survive the swap.
    assert "js-plotly-plot" in (page.locator("#chart").get_attribute("class") or "")
    other = chromium.new_context(viewport={"width": 1280, "height": 800})
    fresh = other.new_page()
    fresh.goto(page.url)
    fresh.locator("#chart[data-drawn='1']").wait_for()
    before = chart_image(fresh)
    other.close()
    assert differing_share(after, before) < 0.01


def test_a_rejected_parameter_says_why_on_its_control_and_the_rest_is_drawn(page, run):
    open_dashboard(page, run, "?policy=mythex")
    page.fill("#policy-params input[name=keep_fraction]", "7")
    page.locator("#policy-params input[name=keep_fraction]").dispatch_event("change")
    error = page.locator("#error-keep_fraction")
    error.wait_for()
    assert "keep_fraction must be in (0, 1]" in error.inner_text()
    field = page.locator("#policy-params input[name=keep_fraction]")
    assert field.get_attribute("aria-invalid") == "true" and field.input_value() == "7"
    # The dashboard is still drawn, with that parameter at its default, and says so.
    page.locator("#chart[data-drawn='1']").wait_for()
    assert "its default" in page.locator("#param-errors").inner_text()
    # Correcting it redraws the chart and the error goes.
    page.fill("#policy-params input[name=keep_fraction]", "0.25")
    page.locator("#policy-params input[name=keep_fraction]").dispatch_event("change")
    page.locator("#error-keep_fraction").wait_for(state="detached")
    page.locator("#chart[data-drawn='1']").wait_for()
    assert page.locator("#param-errors").count() == 0
    assert page.locator("input[name=keep_fraction]").get_attribute("type") == "number"


def test_a_timed_run_draws_against_time_and_switches_in_place(page):
    import json as _json

    from django.contrib.auth.models import User

    from tests.web.test_import_service import import_bytes
    from webapp.models import Run

    messages = []
    for i in range(6):
        messages.append(
            {"role": "user", "content": f"q{i} " * 50, "timestamp": f"2026-03-01T10:0{i}:00Z"}
        )
        messages.append(
            {"role": "assistant", "content": "a", "timestamp": f"2026-03-01T10:0{i}:09Z"}
        )
    owner, _ = User.objects.get_or_create(username="local")
    data = {"contextsim": 1, "runs": [{"title": "timed", "messages": messages}]}
    import_bytes(owner, "t.json", _json.dumps(data).encode())
    run = Run.objects.get(title="timed")
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    open_dashboard(page, run)
    assert page.locator("#chart .xtitle").text_content() == "request (step)"
    page.evaluate("document.getElementById('chart').dataset.drawn = ''")
    page.select_option("select[name=x]", "time")
    page.wait_for_url(re.compile(r"x=time"))
    page.locator("#chart[data-drawn='1']").wait_for()
    assert page.locator("#chart .xtitle").text_content() == "time (UTC)"
    assert page.locator("#chart .legend").count() == 1
    assert errors == []


def test_the_ledger_scrolled_into_the_dashboard_draws_its_heatmap_with_its_own_bundle(page, run):
    """The dashboard loads plotly.js's basic bundle, which has no heatmap; the ledger's
    partial brings the cartesian one in, and the composition chart keeps its own."""
    open_dashboard(page, run)
    page.locator("#ledger").scroll_into_view_if_needed()
    page.locator("#ledger .ledger-chart[data-drawn='1']").wait_for(timeout=30_000)
    assert page.locator("#ledger .ledger-chart .hm image").count() >= 1
    scripts = page.evaluate("[...document.scripts].map(s => s.src.split('/').pop())")
    assert "plotly-basic.min.js" in scripts and "plotly-cartesian.min.js" in scripts
    assert not page.evaluate("'heatmap' in window.Plotly.PlotSchema.get().traces")
    page.evaluate("document.getElementById('chart').dataset.drawn = ''")
    page.fill("input[name=budget]", "9000")
    page.locator("input[name=budget]").dispatch_event("change")
    page.locator("#chart[data-drawn='1']").wait_for()
    assert page.locator("#chart .legend").count() == 1


def test_the_agent_config_panel_follows_a_parameter_change_and_stays_open(page, run):
    open_dashboard(page, run, "?policy=anthropic_clear_tool_uses&trigger=5000")
    panel = page.locator("#use-in-agent")
    panel.locator("summary").click()
    text = panel.locator("pre").first
    assert '"value": 5000' in text.inner_text()
    page.fill("#policy-params input[name=trigger]", "7000")
    page.press("#policy-params input[name=trigger]", "Tab")  # a change: applied in place
    page.wait_for_url(re.compile(r"trigger=7000"))
    page.locator("#use-in-agent pre", has_text='"value": 7000').first.wait_for()
    assert page.locator("#use-in-agent").evaluate("e => e.open") is True
    # On a phone the open panel's snippets wrap: nothing wider than the screen (the
    # chart redraws itself to the new width a moment after the resize).
    page.set_viewport_size({"width": 390, "height": 800})
    wait_until(page, "document.documentElement.scrollWidth <= 390")


def test_no_chart_control_sends_the_data_to_plotly_cloud(page, run):
    # plotly.js 4 adds a button that posts the chart's data to cloud.plotly.com to the
    # modebar unless told not to (showSendToCloud is true by default).
    open_dashboard(page, run)
    page.hover("#chart")
    titles = page.eval_on_selector_all(
        "#chart .modebar-btn", "nodes => nodes.map(n => n.getAttribute('data-title') || '')"
    )
    assert titles  # the modebar is there (zoom, download...)
    assert not [t for t in titles if "Chart Studio" in t or "cloud" in t.lower()]
    config = page.evaluate(
        "(() => { const c = document.getElementById('chart')._context;"
        " return [c.showSendToCloud, c.plotlyServerURL]; })()"
    )
    assert config == [False, ""]
