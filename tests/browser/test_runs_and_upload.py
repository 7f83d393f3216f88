"""A newcomer's first minutes, in real Chromium: upload logs, see errors inline, open a run,
search the list."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.web.test_import_service import NATIVE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_upload_shows_an_inline_error_and_links_to_the_imported_runs(page, tmp_path):
    good = write(tmp_path, "good.json", json.dumps(NATIVE).encode())
    bad = write(tmp_path, "bad.jsonl", b'{"contextsim": 1, "type": "run"}\n{"type": "video"}\n')
    page.goto(page.base + "/upload/")
    page.set_input_files("#id_files", [good, bad])
    assert page.locator("#drop-files").inner_text() == "good.json, bad.jsonl"
    page.click("button[type=submit]")
    error = page.locator(".job-failed")
    error.wait_for()
    assert "bad.jsonl: line 2: unknown record type 'video'" in error.inner_text()
    assert page.url.endswith("/upload/")  # htmx swapped the results in place
    page.locator(".job-done a", has_text="main").click()
    page.wait_for_url(re.compile(r"/runs/[\w-]+/$"))
    assert page.locator("h1").inner_text() == "main"
    page.locator("#chart[data-drawn='1']").wait_for()
    rows = page.locator("#trace-table tbody tr")
    assert rows.count() == 2
    assert "300" in rows.nth(1).inner_text()


def test_search_filters_the_list_in_place_and_pushes_the_url(page, tmp_path):
    page.goto(page.base + "/upload/")
    page.set_input_files("#id_files", [write(tmp_path, "good.json", json.dumps(NATIVE).encode())])
    page.click("button[type=submit]")
    page.locator(".job-done").wait_for()
    page.goto(page.base + "/")
    assert page.locator("#run-table tbody tr").count() == 2
    page.fill("input[name=q]", "helper")
    page.wait_for_url(re.compile(r"\?q=helper"))
    page.locator("#run-table tbody tr").first.wait_for()
    assert page.locator("#run-table tbody tr").count() == 1
    assert "helper" in page.locator("#run-table").inner_text()
    page.fill("input[name=q]", "no such thing")
    page.locator("text=No run matches").wait_for()


def test_a_session_and_its_subagent_uploaded_together_are_a_tree_to_walk(page, tmp_path):
    from tests.web.test_sessions import AGENT, MAIN

    (tmp_path / "subagents").mkdir()
    main = write(tmp_path, "session.jsonl", MAIN)
    agent = write(tmp_path, "subagents/agent-a7.jsonl", AGENT)
    page.goto(page.base + "/upload/")
    page.set_input_files("#id_files", [main, agent])
    page.click("button[type=submit]")
    page.locator(".job-done").nth(1).wait_for()
    page.locator(".job-done a", has_text="fix the bug").first.click()
    page.locator("#chart[data-drawn='1']").wait_for()
    # The trace row of the call that started the subagent links to its run ...
    page.locator("#trace-table a[title='the subagent this call started']").click()
    page.locator("#chart[data-drawn='1']").wait_for()
    # ... whose page links back to the step that started it, showing that call.
    page.locator("#started-by a").click()
    page.wait_for_url(re.compile(r"/steps/0/$"))
    assert "Started the subagent" in page.locator("main").inner_text()
    page.locator("h1 a").click()
    page.locator("nav.siblings a").first.click()
    tree = page.locator("#session-tree")
    tree.wait_for()
    assert "started at step 0" in tree.inner_text()
