"""The four questions a person brings to a real Claude Code session, answered on its
dashboard within two clicks, with the figures the log itself gives (read here from the
raw JSONL): why and when it compacted, what fills the context, what it cost, which
problem costs most. And what the person sees: one hover box per step, the chart kept
on a phone, colours that can be told apart, back and forward in step with the controls,
a PNG that says what it shows."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from tests.browser.conftest import wait_until
from tests.conftest import corpus_files, log_entries

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SESSION = corpus_files("claude_code", "codemie_session-624a*.jsonl")


def _facts(path: Path) -> dict[str, object]:
    """What the log says: its compaction's trigger and preTokens, the tools it called."""
    boundaries, tools = [], set()
    for entry in log_entries(path):
        if entry.get("type") == "system" and entry.get("subtype") == "compact_boundary":
            meta = entry.get("compactMetadata") or {}
            boundaries.append((meta.get("trigger"), meta.get("preTokens")))
        message = entry.get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            tools |= {
                b["name"]
                for b in message["content"]
                if isinstance(b, dict) and b.get("type") == "tool_use"
            }
    return {"boundaries": boundaries, "tools": tools}


@pytest.fixture
def session(page, request):  # type: ignore[no-untyped-def]
    """The real session, imported for the local user; (run, the log's facts)."""
    from django.contrib.auth.models import User

    from tests.web.test_import_service import import_bytes
    from webapp.models import Run

    path = request.param
    owner, _ = User.objects.get_or_create(username="local")
    import_bytes(owner, path.name, path.read_bytes())
    run = Run.objects.get(subagent=False, compaction_request=False)
    return run, _facts(path)


def _open(page, run, query: str = "") -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{page.base}/runs/{run.public_id}/{query}")
    wait_until(
        page, "document.getElementById('chart') && document.getElementById('chart').dataset.drawn"
    )


def _number(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.mark.parametrize("session", SESSION, indirect=True)
def test_why_it_compacted_is_on_the_dashboard_and_one_click_from_the_step(page, session):
    run, facts = session
    ((trigger, pre),) = facts["boundaries"]
    _open(page, run)
    event = page.locator("#compactions li").first
    text = event.inner_text()
    assert trigger in text and f"{pre:,}" in text and "preTokens" in text
    assert "Threshold" in text and "window" in text and "200,000" in text
    # One click: the step after it, its compaction first, the summary sent on page one.
    event.locator("a").first.click()
    box = page.locator("#compaction-event")
    assert f"{pre:,}" in box.inner_text() and "It compacts at" in box.inner_text()
    summary = box.locator("a[href^='#item-']")
    target = summary.get_attribute("href")
    card = page.locator(target)
    assert card.count() == 1 and "kept" in card.inner_text()
    assert "continued from a previous conversation" in card.inner_text()


@pytest.mark.parametrize("session", SESSION, indirect=True)
def test_the_compaction_marker_hover_says_why_and_one_box_shows_every_layer(page, session):
    run, facts = session
    ((_, pre),) = facts["boundaries"]
    _open(page, run)
    figure = page.evaluate("() => document.getElementById('chart').data.map(t => t.name)")
    marker = figure.index("compaction")
    step = page.evaluate(f"() => document.getElementById('chart').data[{marker}].x[0]")
    # Pointing at the marker's step, as plotly.js hovers a mouse there.
    page.evaluate(f"() => Plotly.Fx.hover('chart', {{xval: {step}}})")
    hover = page.evaluate("() => document.querySelector('#chart .hoverlayer').textContent")
    assert f"{pre:,}" in hover and "compacts" in hover
    # x unified: the box at that step lists the other layers too.
    assert "measured" in hover and "kept: user" in hover
    assert page.evaluate("() => document.getElementById('chart').layout.hovermode") == "x unified"
    assert step > 0


@pytest.mark.parametrize("session", SESSION, indirect=True)
def test_what_fills_the_context_by_tool_and_in_each_request(page, session):
    run, facts = session
    _open(page, run)
    rows = page.locator("#tool-table tbody tr")
    named = {rows.nth(i).locator("td").first.inner_text() for i in range(rows.count())}
    assert named == facts["tools"]
    # Largest first, with a cost each.
    sent = [_number(rows.nth(i).locator("td").nth(4).inner_text()) for i in range(rows.count())]
    assert sent == sorted(sent, reverse=True)
    # One click: a step's bar and table hold everything sent, the unlogged part too.
    page.locator("#trace-table tbody tr a").nth(10).click()
    parts = page.locator("#step-parts tbody tr")
    labels = [parts.nth(i).locator("td").first.inner_text() for i in range(parts.count())]
    assert labels[0].startswith("unlogged") and labels[-1] == "sent"
    figures = [
        _number(parts.nth(i).locator("td").nth(1).inner_text()) for i in range(parts.count())
    ]
    assert abs(sum(figures[:-1]) - figures[-1]) <= len(figures)
    formula = page.locator("#size-formula").inner_text()
    found = re.findall(r"[\d,]+", formula)
    assert _number(found[-1]) == figures[-1]
    assert page.locator(".context-bar .seg.k-unlogged").count() == 1


@pytest.mark.parametrize("session", SESSION, indirect=True)
def test_the_costliest_problem_is_called_out_and_the_trace_sorts_by_cost(page, session):
    run, _ = session
    _open(page, run)
    callout = page.locator("#costliest")
    dollars = float(re.search(r"\$([\d.]+)", callout.inner_text()).group(1))
    first = page.locator(".problem-list li").first
    assert f"${dollars:.2f}" in first.inner_text()
    costs = [
        float(t.replace("$", ""))
        for t in page.locator(".problem-list li b.impact").all_inner_texts()
    ]
    assert costs == sorted(costs, reverse=True) and costs[0] == dollars
    # The trace by cost, costliest first, in one click.
    page.locator("#trace-table th a", has_text="Cost").click()
    wait_until(page, "location.search.includes('sort=cost')")
    wait_until(page, "document.querySelector('#trace-table th[aria-sort]')")
    cells = page.locator("#trace-table tbody tr td:last-child").all_inner_texts()
    values = [float(c.replace("$", "")) for c in cells]
    assert values == sorted(values, reverse=True)
    # The measured cost is the sum of every request's.
    measured = float(page.locator("#measured-cost dd").first.inner_text().replace("$", ""))
    assert measured > values[0] > 0


@pytest.mark.parametrize("session", SESSION, indirect=True)
def test_back_and_forward_keep_the_controls_in_step_with_the_results(page, session):
    run, _ = session
    _open(page, run)
    page.select_option("select[name=policy]", "claude_code_auto_compact")
    wait_until(page, "location.search.includes('policy=claude_code_auto_compact')")
    page.fill("input[name=budget]", "150000")
    page.locator("input[name=budget]").dispatch_event("change")
    wait_until(page, "location.search.includes('budget=150000')")
    page.go_back()
    wait_until(page, "!location.search.includes('budget=150000')")
    wait_until(
        page, "document.getElementById('chart') && document.getElementById('chart').dataset.drawn"
    )
    assert page.locator("select[name=policy]").input_value() == "claude_code_auto_compact"
    assert page.locator("input[name=budget]").input_value() != "150000"
    assert "claude_code_auto_compact" in page.locator(".chart-head").inner_text()
    page.go_back()
    wait_until(page, "!location.search.includes('policy=')")
    wait_until(
        page, "document.getElementById('chart') && document.getElementById('chart').dataset.drawn"
    )
    assert page.locator("select[name=policy]").input_value() == "as_logged"
    assert "as_logged" in page.locator(".chart-head").inner_text()


@pytest.mark.parametrize("session", SESSION, indirect=True)
def test_the_budget_slider_moves_in_useful_steps_and_the_borrow_list_offers_no_summary(
    page, session
):
    from webapp.models import Run

    run, _ = session
    # Beside it, a compaction's summary request and another session of the same model.
    summary = Run.objects.create(
        owner=run.owner,
        title="summary",
        model=run.model,
        requests_with_usage=1,
        compaction_request=True,
    )
    other = Run.objects.create(
        owner=run.owner, title="another session", model=run.model, requests_with_usage=9
    )
    _open(page, run)
    slider = page.locator("input[name=budget_slider]")
    top, step = int(slider.get_attribute("max")), int(slider.get_attribute("step"))
    # About 200 stops over the range, whatever the window (the log's: 200,000 here).
    assert 100 <= top // step <= 400
    before = int(page.locator("input[name=budget]").input_value())
    slider.focus()
    page.keyboard.press("ArrowLeft")
    wait_until(page, f"document.querySelector('input[name=budget]').value !== '{before}'")
    assert before - int(page.locator("input[name=budget]").input_value()) == step
    # The fit to borrow: other runs of the model, never the request that wrote a summary.
    offered = page.locator("select[name=borrow] option").evaluate_all(
        "options => options.map(o => o.value).filter(v => v)"
    )
    assert other.public_id in offered and summary.public_id not in offered


@pytest.mark.parametrize("session", SESSION, indirect=True)
def test_the_png_is_titled_with_run_policy_and_estimator(page, session):
    from PIL import Image

    run, _ = session
    _open(page, run)
    page.locator("#chart").hover()
    with page.expect_download() as download:
        page.locator("#chart .modebar-btn[data-title^='Download as a PNG']").click()
    saved = download.value
    assert saved.suggested_filename == f"contextsim-{run.public_id}-as_logged.png"
    image = Image.open(io.BytesIO(Path(saved.path()).read_bytes())).convert("L")
    # The title is drawn in the top band, left aligned: dark text on the white.
    band = image.crop((0, 0, image.width // 2, 60))
    assert band.getextrema()[0] < 100
    meta = page.evaluate("() => document.getElementById('chart').layout.meta.title")
    assert run.title[:20] in meta and "as_logged" in meta and "tokens" in meta


@pytest.mark.parametrize("session", SESSION, indirect=True)
def test_a_phone_gets_a_usable_chart_and_a_tap_opens_the_step(page, chromium, session):
    run, _ = session
    context = chromium.new_context(
        viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True
    )
    phone = context.new_page()
    phone.set_default_timeout(15_000)
    phone.base = page.base
    try:
        _open(phone, run)
        plot = phone.locator("#chart .nsewdrag").first.bounding_box()
        assert plot["height"] >= 250 and plot["width"] >= 280
        assert phone.evaluate("() => document.documentElement.scrollWidth") <= 390
        phone.locator("#chart").scroll_into_view_if_needed()
        plot = phone.locator("#chart .nsewdrag").first.bounding_box()
        phone.touchscreen.tap(plot["x"] + plot["width"] * 0.5, plot["y"] + plot["height"] * 0.6)
        phone.wait_for_url(re.compile(r"/steps/\d+/"))
    finally:
        context.close()


WCAG_CONTRAST = """(pair) => {
  const channel = (c) => {
    c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const lum = (hex) => {
    const v = hex.replace('#', '');
    const n = [0, 2, 4].map(i => parseInt(v.slice(i, i + 2), 16));
    return 0.2126 * channel(n[0]) + 0.7152 * channel(n[1]) + 0.0722 * channel(n[2]); };
  const [a, b] = pair.map(lum).sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


@pytest.mark.parametrize("session", SESSION, indirect=True)
def test_every_chart_layer_and_every_text_has_the_contrast_people_need(
    page, chromium, axe_source, session
):
    from tests.browser.conftest import axe_violations

    run, _ = session
    context = chromium.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    checked = context.new_page()
    checked.set_default_timeout(15_000)
    checked.base = page.base
    try:
        _open(checked, run)
        # Each filled layer and each line, as drawn, against the plot's background.
        colours = checked.evaluate(
            "() => { const gd = document.getElementById('chart');"
            " return [gd._fullLayout.plot_bgcolor, gd._fullData.map(t => [t.name,"
            " t.fill && t.fill !== 'none' ? t.fillcolor : (t.mode.includes('lines') ? t.line.color"
            " : t.marker.color)])]; }"
        )
        background, layers = colours
        assert background.lower() in ("#fff", "#ffffff")
        for name, colour in layers:
            ratio = checked.evaluate(WCAG_CONTRAST, [colour, "#ffffff"])
            assert ratio >= 3, f"{name}: {colour} is {ratio:.2f}:1 on the white plot"
        # Text: axe-core's colour-contrast rule (4.5:1) on the dashboard and a step.
        found = axe_violations(checked, axe_source, ["color-contrast"])
        assert found == [], found
        checked.locator("#compactions li a").first.click()
        checked.wait_for_url(re.compile(r"/steps/\d+/"))
        found = axe_violations(checked, axe_source, ["color-contrast"])
        assert found == [], found
        # And the rest of axe's rules, on the dashboard and the pages around it.
        _open(checked, run)
        found = axe_violations(checked, axe_source)
        assert found == [], found
        for path in ("/", "/upload/", f"/sweeps/new/?run={run.public_id}", "/estimators/"):
            checked.goto(checked.base + path)
            checked.wait_for_load_state("networkidle")
            found = axe_violations(checked, axe_source)
            assert found == [], (path, found)
    finally:
        context.close()


PAI = corpus_files("claude_code", "pai_b7a09704*.jsonl")


@pytest.mark.skipif(len(PAI) < 2, reason="the pai session and its subagent are not here")
def test_a_session_uploaded_again_as_a_zip_is_the_run_already_there(page, tmp_path, eager_tasks):
    # A zip is unpacked by a worker, never in the request (here the worker's task runs
    # eagerly, as the request queues it).
    import zipfile

    from webapp.models import Run

    main = next(p for p in PAI if "agent-" not in p.name)
    page.goto(page.base + "/upload/")
    page.set_input_files("#id_files", [str(p) for p in PAI])
    page.click("button[type=submit]")
    page.locator(".job-done").first.wait_for()
    wait_until(page, f"document.querySelectorAll('.job-done').length >= {len(PAI)}")
    runs = Run.objects.count()
    again = tmp_path / "again.zip"
    with zipfile.ZipFile(again, "w") as archive:
        archive.writestr(main.name, main.read_bytes())
    page.goto(page.base + "/upload/")
    page.set_input_files("#id_files", [str(again)])
    page.click("button[type=submit]")
    recognised = page.locator("[id^=recognised-]")
    recognised.wait_for()
    assert "imported before" in recognised.inner_text()
    link = page.locator("[id^=recognised-] + ul a").first
    stored = Run.objects.get(subagent=False, compaction_request=False)
    assert link.inner_text() == stored.title
    assert Run.objects.count() == runs
    # The collection still holds the session once, its subagent drawn from the step
    # that started it.
    link.click()
    page.wait_for_url(re.compile(r"/runs/[\w-]+/$"))
    page.locator("nav.siblings a").first.click()
    page.wait_for_url(re.compile(r"/collections/[\w-]+/"))
    wait_until(page, "document.querySelector('[data-figure=fleet-data]').dataset.drawn")
    lines = page.evaluate(
        "() => document.querySelector('[data-figure=fleet-data]').data.map(t => [t.name, t.x[0]])"
    )
    names = [name for name, _ in lines]
    assert len(names) == len(set(names)) == Run.objects.count()
    starts = dict(lines)
    agent = next(name for name in starts if name.startswith("Explore"))
    assert starts[agent] > 0 and min(starts.values()) == 0


@pytest.mark.parametrize("session", SESSION, indirect=True)
def test_the_sweep_form_starts_from_the_sessions_own_mechanisms(page, session):
    run, _ = session
    _open(page, run)
    page.locator(".page-head a", has_text="sweep").click()
    page.wait_for_url(re.compile(r"/sweeps/new/"))
    checked = page.locator("input[name=policies]:checked")
    values = sorted(checked.nth(i).get_attribute("value") for i in range(checked.count()))
    assert values == ["as_logged", "claude_code_auto_compact", "claude_code_microcompact"]
    assert page.locator("input[name=hard_limit]").input_value() == "200000"
