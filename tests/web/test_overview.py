"""The overview across runs, on real sessions: its totals are the logs' own usage (read
here from the raw JSONL), its cost is what each run's dashboard says it cost, every
grouping adds up to the total, every row opens the runs behind it, and the table comes
as CSV."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from contextsim.truth.prices import run_measured_cost
from tests.conftest import corpus_files, log_entries, npm_package
from tests.web.test_import_service import import_bytes
from webapp.dashboard.analysis import run_prices
from webapp.models import Run
from webapp.store.reads import skeleton_of

pytestmark = pytest.mark.django_db

SESSION = corpus_files("claude_code", "codemie_session-624a*.jsonl")
ROLLOUT = corpus_files("codex", "zoqore_rollout-2025-12-09T18-1*.jsonl")


def _claude_tokens(path) -> int:
    """The session's measured tokens as ccusage counts them: each response (message id)
    once, its last usage."""
    last: dict[str, dict] = {}
    for entry in log_entries(path):
        message = entry.get("message")
        if entry.get("type") == "assistant" and isinstance(message, dict) and message.get("usage"):
            last[message.get("id") or str(len(last))] = message["usage"]
    keys = (
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
    )
    return sum(u.get(k) or 0 for u in last.values() for k in keys)


def _page(client, **query):
    return client.get(reverse("overview"), query)


@pytest.mark.parametrize("session", SESSION)
@pytest.mark.parametrize("rollout", ROLLOUT)
def test_the_overview_adds_up_to_the_logs_and_the_dashboards(alice, alice_client, session, rollout):
    import_bytes(alice, session.name, session.read_bytes())
    import_bytes(alice, rollout.name, rollout.read_bytes())
    page = _page(alice_client, by="agent")
    assert page.status_code == 200
    total = page.context["total"]
    claude = next(g for g, _ in page.context["rows"] if g.key == "claude-code")
    assert claude.total == _claude_tokens(session)
    # The cost is each run's measured cost, as its dashboard shows it.
    expected = 0.0
    for run in Run.objects.filter(owner=alice):
        sk = skeleton_of(run, "chars4")
        expected += run_measured_cost(run.model, sk.usage, run_prices(run)) or 0.0
    assert total.cost == pytest.approx(expected, abs=1e-5)  # each run's rounded to 1e-6
    # The compactions the logs record: Claude Code's compact boundaries, Codex's
    # compacted records.
    marks = sum(1 for e in log_entries(session) if e.get("subtype") == "compact_boundary")
    marks += sum(1 for e in log_entries(rollout) if e.get("type") == "compacted")
    assert total.compactions == marks >= 1
    # Every grouping adds up to the same total.
    for by in ("day", "week", "month", "model", "project", "session"):
        rows = [g for g, _ in _page(alice_client, by=by).context["rows"]]
        assert sum(g.total for g in rows) == total.total, by
        assert sum(g.cost for g in rows) == pytest.approx(total.cost), by
        assert sum(g.compactions for g in rows) == total.compactions, by


@pytest.mark.parametrize("session", SESSION)
def test_rows_open_the_runs_behind_them_and_the_table_comes_as_csv(alice, alice_client, session):
    import_bytes(alice, session.name, session.read_bytes())
    by_day = _page(alice_client, by="day")
    (day, opens) = by_day.context["rows"][0]
    narrowed = alice_client.get(reverse("overview") + opens)
    assert narrowed.context["by"] == "session"
    sessions = narrowed.context["rows"]
    assert sum(g.total for g, _ in sessions) == day.total
    _, link = sessions[0]
    assert alice_client.get(link).status_code == 200  # the session's run or collection
    exported = alice_client.get(reverse("overview"), {"by": "day", "format": "csv"})
    table = list(csv.reader(io.StringIO(exported.content.decode())))
    assert table[0][:2] == ["day", "responses"]
    assert sum(int(row[3]) + int(row[4]) + int(row[5]) + int(row[6]) for row in table[1:]) == (
        by_day.context["total"].total
    )


def test_filters_that_cannot_be_used_are_named(alice_client):
    for query, said in (
        ({"since": "yesterday"}, "since: expected a date such as 2026-12-05"),
        ({"since": "2026-12-05", "until": "2026-12-01"}, "since: 2026-12-05 is after until"),
        ({"by": "planet"}, "by: expected one of day, week, month"),
    ):
        page = _page(alice_client, **query)
        assert page.status_code == 400 and said in page.content.decode()


def test_nobody_sees_anothers_overview(alice, bob, client):
    from tests.web.test_dashboard import native_run

    import_bytes(alice, "a.json", native_run())
    client.force_login(bob)
    assert _page(client).context["total"].responses == 0
    client.logout()
    assert _page(client).status_code == 302  # to the sign-in page


CCUSAGE_VERSION = "20.0.24"


@pytest.fixture(scope="session")
def ccusage() -> str:
    """ccusage's command, installed by npm (tests.conftest.npm_package)."""
    return str(npm_package("ccusage", CCUSAGE_VERSION, ".bin/ccusage"))


@pytest.mark.parametrize("path", corpus_files("claude_code", "*.jsonl"))
def test_each_days_tokens_equal_ccusages(alice, alice_client, ccusage, path, tmp_path):
    import os
    import shutil
    import subprocess

    project = tmp_path / ".claude" / "projects" / "-project"
    project.mkdir(parents=True)
    shutil.copy(path, project / path.name)
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude"), "TZ": "UTC"}
    env["CODEX_HOME"] = str(tmp_path / "no-codex")
    said = subprocess.run(
        [ccusage, "daily", "--json", "--offline"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    theirs = {
        d["period"]: (
            d["inputTokens"],
            d["cacheReadTokens"],
            d["cacheCreationTokens"],
            d["outputTokens"],
        )
        for d in json.loads(said.stdout)["daily"]
    }
    import_bytes(alice, path.name, path.read_bytes())
    rows = [g for g, _ in _page(alice_client, by="day").context["rows"]]
    ours = {g.key: (g.input, g.cache_read, g.cache_write, g.output) for g in rows}
    if not _through_bedrock(path):
        assert ours == theirs
    else:
        # Where ccusage is wrong (the issue's own finding): a Claude Code session run
        # through Bedrock (message ids msg_bdrk_..., no request ids) has its responses'
        # repeated lines counted again by ccusage's daily report. Ours counts each
        # response once, as the log's message ids say.
        assert sum(map(sum, ours.values())) == _claude_tokens(path)
        assert sum(map(sum, theirs.values())) > sum(map(sum, ours.values()))


def _through_bedrock(path) -> bool:
    return any(
        str((e.get("message") or {}).get("id", "")).startswith("msg_bdrk_")
        for e in log_entries(path)
        if e.get("type") == "assistant"
    )


def test_a_label_from_a_log_is_shown_as_text_in_the_chart():
    from webapp.overview.reads import Group
    from webapp.overview.views import _figure

    figure = _figure(
        [Group("r1", '<a href="https://evil.example">click</a> and more text')], "session"
    )
    shown = figure["layout"]["xaxis"]["ticktext"][0] + figure["data"][0]["customdata"][0][0]
    assert "<a" not in shown and "&lt;a href=" in shown


def _tools_called(path) -> set[str]:
    """The tools a Claude Code session's assistant messages call, read from the JSONL."""
    found = set()
    for entry in log_entries(path):
        message = entry.get("message")
        if entry.get("type") == "assistant" and isinstance(message, dict):
            for block in message.get("content") or ():
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    found.add(block["name"])
    return found


@pytest.mark.parametrize("session", SESSION)
def test_where_the_context_went_is_each_runs_page_summed(alice, alice_client, session):
    from webapp.dashboard.analysis import analyse, tool_parts
    from webapp.dashboard.state import defaults_for, read_state
    from webapp.store.actions import derivation

    import_bytes(alice, session.name, session.read_bytes())
    runs = list(Run.objects.filter(owner=alice))
    # Before the job has run, the page says the runs are still being counted.
    waiting = _page(alice_client).context["where"]
    assert waiting.counted == 0 and waiting.waiting == len(runs)

    def days() -> dict:
        rows = _page(alice_client, by="day").context["rows"]
        return {
            g.key: (g.input, g.cache_read, g.cache_write, g.output, g.responses, round(g.cost, 9))
            for g, _ in rows
        }

    read_now = days()  # from every response
    assert derivation.do_derive_pending(limit=100) == len(runs)
    assert derivation.pending() == []  # stored: not derived again
    assert days() == read_now  # from the sums stored per run, day and model
    from webapp.models import RunShares

    assert RunShares.objects.count() == len(runs)
    assert all(d.get("days") for d in RunShares.objects.values_list("data", flat=True))
    where = _page(alice_client).context["where"]
    assert (where.counted, where.waiting) == (len(runs), 0)
    # Each tool's tokens are the sum of what each run's page says it sent.
    tools: dict[str, int] = {}
    sent = 0
    for run in runs:
        state = read_state({}, defaults=defaults_for(run.model, run.context_window))
        result = analyse(run, state, alone=True)
        sent += sum(r.sent for r in result.main.records)
        for t in tool_parts(result, None, run)[0]:
            if t.run_tokens:
                tools[t.name] = tools.get(t.name, 0) + t.run_tokens
    assert where.sent == sent
    assert {s.name: s.tokens for s in where.tools} == tools
    # The tools are the ones the log calls; their parts are part of what was sent.
    assert {s.name for s in where.tools} == _tools_called(session)
    parts = {s.name: s.tokens for s in where.parts}
    assert parts["tool_result"] > 0 and parts["user"] > 0
    assert sum(s.tokens for s in where.tools) <= parts["tool_result"] + parts.get(
        "tool_call", 0
    ) + parts.get("assistant", 0) + parts.get("cleared", 0)
    # A tool's row opens the sessions that used it; its figures are theirs only.
    top = where.tools[0]
    narrowed = _page(alice_client, by="session", tool=top.name)
    assert narrowed.status_code == 200
    assert narrowed.context["where"].counted == top.runs
    page = _page(alice_client).content.decode()
    assert "Where the context went" in page and f"tool={top.name}" in page.replace("%5F", "_")
    # A run that grows gets its shares again, at its new revision.
    Run.objects.filter(pk=runs[0].pk).update(revision=runs[0].revision + 1)
    assert [r.pk for r in derivation.pending()] == [runs[0].pk]


def _ccusage_days(ccusage: str, agent: str, env: dict[str, str]) -> dict[str, dict]:
    import os
    import subprocess

    said = subprocess.run(
        [ccusage, agent, "daily", "--json", "--offline"],
        capture_output=True,
        text=True,
        env={**os.environ, "TZ": "UTC", **env},
        timeout=120,
        check=True,
    )
    return {d.get("date") or d["period"]: d for d in json.loads(said.stdout)["daily"]}


@pytest.mark.parametrize("path", corpus_files("codex", "*rollout-*.jsonl"))
def test_each_codex_days_tokens_and_cost_equal_ccusages(
    alice, alice_client, ccusage, path, tmp_path
):
    import shutil

    day = tmp_path / ".codex" / "sessions" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    shutil.copy(path, day / f"rollout-{path.name.split('rollout-')[-1]}")
    theirs = {
        date: (d["inputTokens"], d["cacheReadTokens"], d["outputTokens"], round(d["costUSD"], 6))
        for date, d in _ccusage_days(
            ccusage, "codex", {"CODEX_HOME": str(tmp_path / ".codex")}
        ).items()
    }
    import_bytes(alice, path.name, path.read_bytes())
    rows = [g for g, _ in _page(alice_client, by="day").context["rows"]]
    ours = {g.key: (g.input, g.cache_read, g.output, round(g.cost, 6)) for g in rows}
    assert ours == theirs


@pytest.mark.parametrize("path", corpus_files("gemini_cli", "*.json"))
def test_each_gemini_days_tokens_and_cost_equal_ccusages(
    alice, alice_client, ccusage, path, tmp_path
):
    import shutil

    chats = tmp_path / ".gemini" / "tmp" / "ab14fe397f91" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(path, chats / f"session-{path.stem.split('session-')[-1]}.json")
    days = _ccusage_days(ccusage, "gemini", {"HOME": str(tmp_path)})
    # ccusage's outputTokens leaves the thoughts out of the output (its totalTokens and
    # its cost have them); ours has them in the output, as Gemini bills them.
    theirs = {
        date: (
            d["inputTokens"],
            d["cacheReadTokens"],
            d["totalTokens"] - d["inputTokens"] - d["cacheReadTokens"] - d["cacheCreationTokens"],
            round(d["totalCost"], 6),
        )
        for date, d in days.items()
    }
    import_bytes(alice, path.name, path.read_bytes())
    rows = [g for g, _ in _page(alice_client, by="day").context["rows"]]
    ours = {g.key: (g.input, g.cache_read, g.output, round(g.cost, 6)) for g in rows}
    assert ours == theirs


def test_rejected_requests_are_counted_on_the_day_of_their_error(alice, alice_client):
    from pathlib import Path

    path = (
        Path(__file__).parent.parent / "systems" / "claude_code" / "fixtures" / "api_errors.jsonl"
    )
    errors = [e for e in log_entries(path) if e.get("isApiErrorMessage")]
    import_bytes(alice, path.name, path.read_bytes())
    page = _page(alice_client, by="day")
    days = {g.key: g for g, _ in page.context["rows"]}
    by_day: dict[str, int] = {}
    for e in errors:
        by_day[e["timestamp"][:10]] = by_day.get(e["timestamp"][:10], 0) + 1
    assert {k: g.rejected for k, g in days.items() if g.rejected} == by_day
    too_long = sum("too long" in e["message"]["content"][0]["text"] for e in errors)
    assert page.context["total"].overflowed == too_long == 1
    assert "over the window" in page.content.decode()
    # A filter on a day before the errors leaves them out; the CSV has them.
    early = _page(alice_client, by="day", until="2026-05-02").context["total"]
    assert early.rejected == 0
    table = list(
        csv.DictReader(io.StringIO(_page(alice_client, by="day", format="csv").content.decode()))
    )
    assert sum(int(r["rejected_requests"]) for r in table) == len(errors)
    assert sum(int(r["rejected_over_the_window"]) for r in table) == 1
    # The run keeps them: its native export says them again.
    from contextsim.systems.native.format import run_to_dict
    from webapp.store.reads import stored_run

    (run,) = Run.objects.filter(owner=alice)
    assert [r["reason"] for r in run_to_dict(stored_run(run))["rejections"]] == [
        "invalid_request 400: Prompt is too long",
        "rate_limit 429: API Error: 429 rate limited",
    ]
