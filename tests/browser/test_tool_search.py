"""Tool search in the browser, on a real capture that defines an MCP server's tools: one
click on "defer all" beside the server shows what deferring its definitions saves, the
control and the URL say what is deferred, the configuration to take back lists the
tools, a bad list is named on its control, and the page passes axe-core."""

from __future__ import annotations

import json
from urllib.parse import unquote

import pytest

from tests.browser.conftest import axe_violations, wait_until
from tests.conftest import corpus_files, log_entries

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CAPTURES = corpus_files("raw_api", "hanq_redacted_log-2026-06-15-09-15-50.jsonl")
SERVER = "codegraph"


@pytest.fixture
def capture(request):  # type: ignore[no-untyped-def]
    """The capture imported for the local user: its run that defines the server's tools,
    and those tools' names as the file's requests define them."""
    from django.contrib.auth.models import User

    from tests.web.test_import_service import import_bytes
    from webapp.models import Run

    path = request.param
    names: set[str] = set()
    for entry in log_entries(path):
        body = (entry.get("request") or {}).get("body")
        if isinstance(body, dict):
            names |= {
                t["name"]
                for t in body.get("tools") or []
                if t["name"].startswith(f"mcp__{SERVER}__")
            }
    owner, _ = User.objects.get_or_create(username="local")
    import_bytes(owner, path.name, path.read_bytes())
    for run in Run.objects.filter(format="capture").order_by("-request_count"):
        if run.messages.filter(kind="tools", parts__icontains=f"mcp__{SERVER}__").exists():
            return run, names
    raise AssertionError("no run of the capture defines the server's tools")


def _drawn(page) -> None:  # type: ignore[no-untyped-def]
    wait_until(
        page, "document.getElementById('chart') && document.getElementById('chart').dataset.drawn"
    )


@pytest.mark.parametrize("capture", CAPTURES, indirect=True)
def test_one_click_defers_a_servers_tools_and_says_what_it_saves(
    page, chromium, axe_source, capture
):
    run, names = capture
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    shown = context.new_page()
    shown.set_default_timeout(15_000)
    outside: list[str] = []
    shown.on(
        "request", lambda r: outside.append(r.url) if not r.url.startswith(page.base) else None
    )
    try:
        shown.goto(f"{page.base}/runs/{run.public_id}/")
        _drawn(shown)
        row = shown.locator("#server-table tr", has_text=SERVER)
        row.get_by_role("link", name="defer all").click()
        wait_until(shown, "!!document.getElementById('deferral')")
        summary = shown.locator("#deferral").inner_text()
        assert (
            f"deferring {len(names)} tools" in summary
            and "fewer tokens sent over the run" in summary
        )
        assert f"defer=mcp__{SERVER}__*" in unquote(shown.url)
        assert shown.locator("input[name=defer]").input_value() == f"mcp__{SERVER}__*"
        # The configuration to take back names every deferred tool.
        shown.locator("#use-in-agent summary").click()
        snippet = shown.locator("#snippet-anthropic-tool-search").inner_text()
        assert names and all(json.dumps(n) in snippet for n in names)
        assert axe_violations(shown, axe_source) == []
        # A bad list: named on its control, the rest of the page still drawn.
        shown.locator("input[name=defer]").fill("Grepp")
        shown.locator("input[name=defer]").press("Enter")
        wait_until(shown, "!!document.getElementById('error-defer')")
        assert "matches no tool this log defines" in shown.locator("#error-defer").inner_text()
        assert shown.locator("#chart").is_visible()
        assert outside == []
    finally:
        context.close()
