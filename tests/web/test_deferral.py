"""Tool search on the dashboard, in the export and in a sweep, on a real capture whose
requests define an MCP server's tools: the tools a person defers leave every request's
tool list, the page says what that saves, and a sweep's cell, the export and the page
agree on it."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from contextsim.analysis.sweep import Config, grid
from contextsim.counting.estimators import ESTIMATORS
from tests.conftest import corpus_files
from tests.web.test_dashboard import get, native_run
from tests.web.test_import_service import import_bytes
from webapp.models import Run, SweepCell
from webapp.sweeps import services as sweeps

pytestmark = pytest.mark.django_db

CAPTURES = corpus_files("raw_api", "hanq_redacted_log-2026-06-15-09-15-50.jsonl")
SERVER = "mcp__codegraph__"


def _file_facts(path) -> tuple[dict[str, str], set[str]]:
    """The definitions the file's requests send (as sent: compact JSON), and the tools
    their replies call."""
    defined: dict[str, str] = {}
    called: set[str] = set()
    for line in path.open("rb"):
        entry = json.loads(line)
        body = entry.get("request", {}).get("body")
        if isinstance(body, dict):
            for tool in body.get("tools") or []:
                text = json.dumps(tool, ensure_ascii=False, separators=(",", ":"))
                defined.setdefault(tool["name"], text)
        reply = (entry.get("response") or {}).get("body")
        if isinstance(reply, dict):
            called |= {
                b.get("name") for b in reply.get("content") or [] if b.get("type") == "tool_use"
            }
    return defined, called


def _server_run(alice, path) -> Run:
    import_bytes(alice, path.name, path.read_bytes())
    for run in Run.objects.filter(format="capture").order_by("-request_count"):
        if run.messages.filter(kind="tools", parts__icontains=SERVER).exists():
            return run
    raise AssertionError("no run of the capture defines the server's tools")


def _sent(exported: dict) -> int:
    """What every request of an export sent (the provider's count where reconciled)."""
    return sum(
        s.get("sent_tokens_reconciled", s["sent_tokens_estimated"]) for s in exported["steps"]
    )


def _summary(page: str) -> str:
    found = re.search(r'<p class="deferral" id="deferral">(.*?)</p>', page, re.S)
    assert found, "no tool-search summary on the page"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", found.group(1)))


@pytest.mark.parametrize("path", CAPTURES)
def test_deferring_a_server_saves_its_definitions_on_every_request(alice, alice_client, path):
    defined, called = _file_facts(path)
    server = {n: d for n, d in defined.items() if n.startswith(SERVER)}
    assert server and not set(server) & called  # defined, never called: nothing loaded
    run = _server_run(alice, path)
    o200k = ESTIMATORS["o200k"]
    removed = sum(o200k.count(d) for d in server.values())
    query = {"policy": "none", "defer": f"{SERVER}*", "estimator": "o200k", "reconcile": "off"}
    page = get(alice_client, "run", run, **query).content.decode()
    summary = _summary(page)
    assert f"deferring {len(server)} tools" in summary
    assert (
        f"{removed:,} tokens of definitions out" in summary and "500 of the tool search" in summary
    )
    saved = (removed - 500) * run.request_count
    assert f"{saved:,} fewer tokens sent over the run" in summary
    # The export of the same state sends that much less than the same policy without it.
    with_it = json.loads(get(alice_client, "export", run, "json", **query).content)
    without = {**query, "defer": ""}
    plain = json.loads(get(alice_client, "export", run, "json", **without).content)
    assert with_it["defer"] == f"{SERVER}*" and plain["defer"] == ""
    assert _sent(plain) - _sent(with_it) == saved
    # The configuration to take back: the deferred tools, by name, and the search tool.
    snippet = page.split('id="snippet-anthropic-tool-search"', 1)[1].split("</div>", 1)[0]
    assert all(name in snippet for name in server) and "tool_search_tool_regex" in snippet
    assert "mcp_server_name" in page.split('id="snippet-anthropic-mcp-toolset"', 1)[1][:600]


@pytest.mark.parametrize("path", CAPTURES)
def test_the_tools_table_offers_to_defer_a_tool_and_a_server(alice, alice_client, path):
    run = _server_run(alice, path)
    page = get(alice_client, "run", run, policy="as_logged").content.decode()
    table = page.split('id="server-table"', 1)[1].split("</table>", 1)[0]
    link = re.search(r'href="\?([^"]*defer=[^"]*)"', table)
    assert link is not None
    target = link.group(1).replace("&amp;", "&")
    # as_logged replays what was sent: the link switches to a what-if (a capture: none).
    assert "policy=none" in target and "defer=mcp__codegraph__%2A" in target
    followed = alice_client.get(reverse("run", args=[run.public_id]) + "?" + target)
    assert followed.status_code == 200 and 'id="deferral"' in followed.content.decode()


@pytest.mark.parametrize("path", CAPTURES)
def test_a_bad_list_of_tools_is_shown_on_its_control_and_the_rest_is_drawn(
    alice, alice_client, path
):
    run = _server_run(alice, path)
    for query, error in (
        (
            {"policy": "none", "defer": "Grepp"},
            "&#x27;Grepp&#x27; matches no tool this log defines",
        ),
        ({"policy": "none", "defer": "mcp__*__x"}, "may only end a pattern"),
        ({"policy": "as_logged", "defer": "Bash"}, "choose a policy"),
    ):
        response = get(alice_client, "run", run, **query)
        page = response.content.decode()
        assert response.status_code == 400
        control = page.split('id="error-defer"', 1)[1].split("</span>", 1)[0]
        assert error in control
        assert 'id="chart"' in page and 'id="deferral"' not in page


@pytest.fixture
def run(alice) -> Run:
    import_bytes(alice, "dash.json", native_run())
    return Run.objects.get(title="dash")


def test_a_run_without_definitions_offers_no_deferral(alice_client, run):
    page = get(alice_client, "run", run, estimator="chars4").content.decode()
    assert 'name="defer"' not in page and ">defer</a>" not in page
    response = get(alice_client, "run", run, estimator="chars4", defer="Read")
    assert response.status_code == 400
    assert "holds no tool definitions" in response.content.decode()


def test_the_sweep_grid_runs_each_what_if_again_with_the_tools_deferred():
    configs = grid(["as_logged", "none"], [100_000, 200_000], None, "mcp__a__*, Read")
    assert [c.label for c in configs] == [
        "as_logged @ 100,000",
        "as_logged @ 200,000",
        "none @ 100,000",
        "none @ 200,000",
        "none @ 100,000, defer=mcp__a__*,Read",
        "none @ 200,000, defer=mcp__a__*,Read",
    ]
    assert Config.from_dict(configs[-1].to_dict()) == configs[-1]


@pytest.mark.parametrize("path", CAPTURES)
def test_a_sweep_cell_that_defers_agrees_with_the_dashboard(alice, alice_client, path, monkeypatch):
    monkeypatch.setattr("webapp.tasks.run_sweep_cells.delay", lambda ids: None)
    monkeypatch.setattr("webapp.tasks.run_sweep_cell.delay", lambda i: None)
    run = _server_run(alice, path)
    configs = grid(["none"], [100_000], None, f"{SERVER}*")
    sweep = sweeps.create_sweep(alice, [run], configs, estimator="o200k", hard_limit=1_000_000)
    cells = list(SweepCell.objects.filter(sweep=sweep).order_by("config"))
    sweeps.run_cells([c.pk for c in cells])
    totals = [SweepCell.objects.get(pk=c.pk).outcome["total_sent"] for c in cells]
    pages = [
        json.loads(
            get(
                alice_client,
                "export",
                run,
                "json",
                policy="none",
                budget=100_000,
                hard_limit=1_000_000,
                estimator="o200k",
                defer=c.defer,
            ).content
        )
        for c in (Config.from_dict(sweep.configs[cell.config]) for cell in cells)
    ]
    assert totals == [_sent(p) for p in pages] and totals[0] > totals[1]


def test_the_sweep_form_names_a_bad_list_of_tools(alice_client: Client, run):
    response = alice_client.post(
        reverse("sweep-new"),
        {
            "runs": [run.public_id],
            "policies": ["none"],
            "budgets": "10000",
            "hard_limit": "40000",
            "estimator": "chars4",
            "defer": "a*b",
        },
    )
    assert response.status_code == 400
    assert "may only end a pattern" in response.content.decode()


@pytest.mark.parametrize("path", CAPTURES)
def test_a_server_never_called_can_be_removed_and_a_called_tool_cannot(alice, alice_client, path):
    defined, called = _file_facts(path)
    server = {n: d for n, d in defined.items() if n.startswith(SERVER)}
    run = _server_run(alice, path)
    o200k = ESTIMATORS["o200k"]
    removed = sum(o200k.count(d) for d in server.values())
    page = get(alice_client, "run", run, policy="as_logged").content.decode()
    table = page.split('id="server-table"', 1)[1].split("</table>", 1)[0]
    assert ">remove all</a>" in table  # the server's tools are never called
    query = {"policy": "none", "remove": f"{SERVER}*", "estimator": "o200k", "reconcile": "off"}
    summary = _summary(get(alice_client, "run", run, **query).content.decode())
    assert f"removing {len(server)} tools never called: {removed:,} tokens" in summary
    assert f"{removed * run.request_count:,} fewer tokens sent over the run" in summary
    snippets = get(alice_client, "run", run, **query).content.decode()
    listed = snippets.split('id="snippet-anthropic-tool-list"', 1)[1].split("</div>", 1)[0]
    assert all(name in listed for name in server)
    # A tool the log calls cannot be removed: the control says at which step.
    calling = next(
        r
        for r in Run.objects.filter(format="capture")
        if r.messages.filter(kind="tools", parts__icontains=SERVER).exists()
        and r.messages.exclude(tool_names="").exists()
    )
    tool = calling.messages.exclude(tool_names="").first().tool_names.split(", ")[0]
    assert tool in called and tool in defined  # as the file says
    response = get(alice_client, "run", calling, policy="none", remove=tool)
    assert response.status_code == 400
    error = response.content.decode().split('id="error-remove"', 1)[1].split("</span>", 1)[0]
    assert f"{tool} is called at step" in error and "defer it instead" in error
