"""Real Chromium (Debian's package) driven by Playwright against the live test server.

Where Chromium is missing the tests skip with the reason, except in CI, where they fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import npm_package

CHROMIUM = os.environ.get("CONTEXTSIM_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests
# make there are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        message = f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium, live_server, settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.LOCAL_USER = "local"
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.base = live_server.url
    yield page
    context.close()


@pytest.fixture
def run(page):  # type: ignore[no-untyped-def]
    """A small native run owned by the local user, with problems at a budget of 8,000."""
    from django.contrib.auth.models import User

    from tests.web.test_dashboard import native_run
    from tests.web.test_import_service import import_bytes
    from webapp.models import Run

    owner, _ = User.objects.get_or_create(username="local")
    import_bytes(owner, "dash.json", native_run())
    return Run.objects.get(title="dash")


@pytest.fixture
def fleet(page):  # type: ignore[no-untyped-def]
    """Three of the seed incident's subagents at a small scale (chars4 only), owned by
    the local user; Celery tasks run in the request that queues them."""
    from django.contrib.auth.models import User

    from contextsim.ingest.base import ParsedFile
    from contextsim.systems.seed.demo import demo_runs
    from webapp.celery import app
    from webapp.models import Visibility
    from webapp.store.actions.saving import do_save_runs

    # No worker process here: tasks run in the request that queues them.
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    owner, _ = User.objects.get_or_create(username="local")
    runs = demo_runs("subagents", chapter_chars=4_000)[:3]
    yield do_save_runs(
        ParsedFile("demo", runs), owner=owner, visibility=Visibility.PRIVATE, estimators=("chars4",)
    )
    app.conf.task_always_eager = previous


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Queued tasks run in the request that queues them (no worker process here)."""
    from webapp.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture(autouse=True)
def fresh_rate_limits() -> None:
    """Each test starts with no attempts counted (the counts live in the cache)."""
    from django.core.cache import cache

    cache.clear()


def wait_until(page, expression: str, timeout: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    """Poll `expression` in the page until it is true. Not page.wait_for_function: that
    evaluates a string with eval inside the page, which the site's CSP forbids."""
    import time

    from playwright.sync_api import Error

    end = time.monotonic() + timeout
    while True:
        try:
            if page.evaluate(f"() => Boolean({expression})"):
                return
        except Error as exc:  # the page is being replaced (a navigation): ask the next
            if "context was destroyed" not in str(exc):
                raise
        if time.monotonic() > end:
            raise AssertionError(f"still false after {timeout} s: {expression}")
        page.wait_for_timeout(100)


AXE_VERSION = "4.14.1"
"""axe-core, the accessibility engine the browser tests run (from npm, never vendored)."""


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's script: from CONTEXTSIM_AXE, else installed by npm into .cache/ the
    first time. Skipped with the reason where npm is missing, except in CI."""
    given = os.environ.get("CONTEXTSIM_AXE")
    if given:
        return Path(given).read_text()
    return npm_package("axe-core", AXE_VERSION, "axe-core/axe.min.js").read_text()


def axe_violations(page, source: str, rules: list[str] | None = None) -> list[dict]:  # type: ignore[no-untyped-def]
    """axe-core's violations on the page as shown (its script added to the page, which
    the page's CSP allows only in a context made with bypass_csp)."""
    page.add_script_tag(content=source)
    options = {"runOnly": {"type": "rule", "values": rules}} if rules else {}
    found: list[dict] = page.evaluate(
        "async (options) => (await axe.run(document, options)).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary)}))",
        options,
    )
    return found
