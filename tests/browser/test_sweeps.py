"""A sweep in real Chromium: from a run's collection to the form, the outcome drawn as
charts, and a cell opening the run's dashboard with that configuration."""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_sweep_started_from_a_collection_shows_its_outcome_and_opens_cells(page, fleet):
    page.goto(f"{page.base}/runs/{fleet[0].public_id}/?estimator=chars4")
    page.click("text=sweep budgets and policies over the collection")
    assert page.locator("input[name=runs]:checked").count() == 3
    # What was sent, and the seed's policies (these runs' system has none of its own).
    checked = page.locator("input[name=policies]:checked")
    values = sorted(checked.nth(i).get_attribute("value") for i in range(checked.count()))
    assert values == ["as_logged", "mythex", "turns"]
    page.uncheck("input[name=policies][value=as_logged]")
    page.fill("input[name=budgets]", "10000, 30000")
    page.fill("input[name=hard_limit]", "40000")
    page.select_option("select[name=estimator]", "chars4")
    page.click("text=Start the sweep")
    page.wait_for_url(re.compile(r"/sweeps/[\w-]+/$"))
    page.locator("text=Done: 12 of 12 cells").wait_for()
    for key in ("finished", "peak", "cost"):
        page.locator(f"[data-figure='sweep-{key}'] .main-svg").first.wait_for()
    # The frontier: one line per policy, both in the legend, their points labelled by
    # budget; mythex finishes all three runs at 10,000 (at 30,000 its chars4 count lets
    # the Russian chapters pass the hard limit, as their dashboards show), turns none.
    frontier = page.locator("[data-figure='frontier-cost']")
    frontier.locator(".main-svg").first.wait_for()
    legend = frontier.locator(".legend .legendtext").all_text_contents()
    assert sorted(legend) == ["mythex", "turns"]
    assert frontier.locator(".scatterlayer .trace").count() == 2
    labels = frontier.locator(".scatterlayer .textpoint").all_text_contents()
    # Each line's budgets are labelled (points drawn at one place share one label,
    # "10k-30k"), and no label prints over another.
    assert {b for label in labels for b in label.split("-")} == {"10k", "30k"}
    boxes = frontier.locator(".scatterlayer .textpoint").evaluate_all(
        "nodes => nodes.map(n => { const r = n.getBoundingClientRect();"
        " return [r.left, r.top, r.right, r.bottom]; })"
    )
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    rows = page.locator("table.data").first.inner_text()
    assert re.search(r"turns\s+10,000\s+0 of 3", rows)
    assert re.search(r"mythex\s+10,000\s+3 of 3", rows)
    assert re.search(r"mythex\s+30,000\s+0 of 3", rows)
    page.locator(".sweep-grid td.bad a").first.click()
    page.wait_for_url(re.compile(r"/runs/[\w-]+/\?policy=turns&budget=10000&hard_limit=40000"))
    page.locator("#chart[data-drawn='1']").wait_for()
    assert "Rejected requests" in page.locator("dl.cards").inner_text()


def test_the_sweep_page_follows_progress_and_shows_the_outcome_when_done(page, fleet):
    from contextsim.analysis.sweep import grid
    from webapp.models import Sweep
    from webapp.sweeps import services as sweeps

    sweep = Sweep.objects.create(
        owner=fleet[0].owner,
        title="followed",
        estimator="chars4",
        hard_limit=40_000,
        configs=[c.to_dict() for c in grid(["turns", "mythex"], [10_000])],
    )
    sweep.runs.set(fleet)
    cells = [
        sweep.cells.create(run=run, config=i) for run in fleet for i in range(len(sweep.configs))
    ]
    page.goto(f"{page.base}/sweeps/{sweep.public_id}/")
    page.locator("#sweep-progress", has_text="0 of 6 cells computed").wait_for()
    sweeps.run_cell(cells[0].pk)
    page.locator("#sweep-progress", has_text="1 of 6 cells computed").wait_for()
    for cell in cells[1:]:
        sweeps.run_cell(cell.pk)
    # The poll sees every cell done and reloads the page, which draws the outcome.
    page.locator("[data-figure='sweep-finished'] .main-svg").first.wait_for()
    assert "Done: 6 of 6 cells" in page.locator("#sweep-progress").inner_text()


def test_the_outcome_drawn_after_following_progress_looks_like_a_fresh_load(page, fleet, chromium):
    from contextsim.analysis.sweep import grid
    from tests.browser.test_dashboard import chart_image, differing_share
    from webapp.models import Sweep
    from webapp.sweeps import services as sweeps

    sweep = Sweep.objects.create(
        owner=fleet[0].owner,
        title="drawn",
        estimator="chars4",
        hard_limit=40_000,
        configs=[c.to_dict() for c in grid(["turns", "mythex"], [10_000, 20_000])],
    )
    sweep.runs.set(fleet)
    cells = [
        sweep.cells.create(run=run, config=i) for run in fleet for i in range(len(sweep.configs))
    ]
    page.goto(f"{page.base}/sweeps/{sweep.public_id}/")
    page.locator("#sweep-progress", has_text="0 of 12 cells computed").wait_for()
    for cell in cells:
        sweeps.run_cell(cell.pk)
    chart = "[data-figure='sweep-finished']"
    page.locator(f"{chart} .main-svg").first.wait_for()
    page.locator(f"{chart} .legend").first.wait_for()
    followed = chart_image(page, chart)
    other = chromium.new_context(viewport={"width": 1280, "height": 800})
    fresh = other.new_page()
    fresh.goto(page.url)
    fresh.locator(f"{chart} .legend").first.wait_for()
    assert differing_share(followed, chart_image(fresh, chart)) < 0.01
    assert fresh.locator(f"{chart} .xtitle").count() == 1
    other.close()
