"""Tunings in the web app: a tuning over a real Claude Code session searched by the
service a worker runs; each mechanism's recommended setting costs what the run's
dashboard says under that setting, and "as it ran" is the dashboard's own policy; the
page shows the setting, its saving, the frontier and the configuration; the form
offers the runs' mechanisms; cancelling stops what was not started; another person
sees nothing of it."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from tests.conftest import corpus_files
from tests.web.test_import_service import import_bytes
from webapp.dashboard.analysis import analyse
from webapp.dashboard.state import defaults_for, read_state
from webapp.models import Run, Tuning, TuningCell
from webapp.tuning import reads, services

pytestmark = pytest.mark.django_db

SESSION = corpus_files("claude_code", "codemie_session-624a*.jsonl")
CAPTURE = corpus_files("raw_api", "hanq_redacted_log-2026-06-15-09-15-50.jsonl")
ESTIMATOR = "chars4"


def _dashboard_cost(run: Run, query: str) -> float:
    state = read_state(QueryDict(query), defaults=defaults_for(run.model, run.context_window))
    state = state.__class__(
        **{**{f: getattr(state, f) for f in state.__slots__}, "estimator": ESTIMATOR}
    )
    return sum(r.cost for r in analyse(run, state, alone=True).main.records)


def _searched(tuning: Tuning) -> None:
    services.run_cells(list(tuning.cells.values_list("pk", flat=True)))


@pytest.mark.parametrize("path", SESSION)
def test_the_recommendation_costs_what_the_dashboard_says(alice, alice_client, path):
    import_bytes(alice, path.name, path.read_bytes())
    main = Run.objects.get(owner=alice, compaction_request=False, subagent=False)
    tuning = services.create_tuning(alice, [main], estimator=ESTIMATOR)
    assert set(tuning.spaces) == {
        "claude-code-auto-compact",
        "claude-code-tool-search",
        "clear-tool-uses",
        "clear-thinking",
    }
    _searched(tuning)
    assert reads.progress(tuning).finished
    views = {v.name: v for v in reads.mechanism_views(tuning)}
    compact = views["claude-code-auto-compact"]
    assert compact.chosen is not None and compact.chosen.rejected == 0
    setting = "&".join(f"{k}={v}" for k, v in compact.setting.items())
    assert compact.chosen.cost == pytest.approx(
        _dashboard_cost(main, f"policy={compact.policy}&{setting}"), abs=1e-9
    )
    (own,) = compact.current_policies
    assert compact.current.cost == pytest.approx(_dashboard_cost(main, f"policy={own}"), abs=1e-9)
    assert compact.search.simulated <= compact.search.grid
    # A mechanism that cannot keep the run within its window says so.
    thinking = views["clear-thinking"]
    assert thinking.chosen is None and thinking.infeasible == len(thinking.search.totals)
    page = alice_client.get(f"/tunings/{tuning.public_id}/")
    assert page.status_code == 200
    shown = page.content.decode()
    for k, v in compact.setting.items():
        assert f"{k}={v}" in shown
    assert "CLAUDE_CODE_AUTO_COMPACT_WINDOW" in shown and "No setting to recommend" in shown
    # The cache and the median request, for what happened (measured), as it ran and
    # the recommendation; what happened reads what the provider measured.
    assert compact.logged.cached == sum(u.cache_read for u in main_usages(main))
    assert shown.count("% from the cache") >= 3 and "median " in shown
    assert alice_client.get("/tunings/").status_code == 200


@pytest.mark.parametrize("path", SESSION)
def test_the_form_offers_the_runs_mechanisms_and_starts_a_tuning(alice, alice_client, path):
    import_bytes(alice, path.name, path.read_bytes())
    main = Run.objects.get(owner=alice, compaction_request=False, subagent=False)
    form = alice_client.get("/tunings/new/", {"run": main.public_id})
    assert form.status_code == 200
    assert set(form.context["offered"]) == {
        "claude-code-auto-compact",
        "claude-code-tool-search",
        "clear-tool-uses",
        "clear-thinking",
    }
    assert "codex-auto-compact" in form.context["others"]
    started = alice_client.post(
        "/tunings/new/",
        {
            "run": [main.public_id],
            "mechanism": ["claude-code-auto-compact"],
            "estimator": ESTIMATOR,
        },
    )
    assert started.status_code == 302
    tuning = Tuning.objects.get(owner=alice)
    assert list(tuning.spaces) == ["claude-code-auto-compact"]
    assert tuning.cells.count() == 1
    refused = alice_client.post("/tunings/new/", {"run": [main.public_id], "estimator": ESTIMATOR})
    assert (
        refused.status_code == 400 and "mechanism: choose at least one" in refused.content.decode()
    )
    # From the overview: its filters choose the runs behind its figures.
    chosen = alice_client.get("/tunings/new/", {"agent": "claude-code"}).context["chosen"]
    assert main in chosen


@pytest.mark.parametrize("path", SESSION)
def test_cancelling_stops_what_was_not_started_and_it_is_private(
    alice, bob, alice_client, client, path
):
    import_bytes(alice, path.name, path.read_bytes())
    main = Run.objects.get(owner=alice, compaction_request=False, subagent=False)
    tuning = services.create_tuning(
        alice, [main], estimator=ESTIMATOR, only=["claude-code-auto-compact"]
    )
    assert alice_client.post(f"/tunings/{tuning.public_id}/cancel/").status_code == 302
    (cell,) = TuningCell.objects.filter(tuning=tuning)
    assert cell.status == TuningCell.Status.FAILED and cell.error == reads.CANCELLED
    tuning.refresh_from_db()
    assert tuning.cancelled is not None and tuning.finished is not None
    _searched(tuning)  # a task delivered after the cancel changes nothing
    assert TuningCell.objects.get(pk=cell.pk).result is None
    client.force_login(bob)
    assert client.get(f"/tunings/{tuning.public_id}/").status_code == 404
    assert client.post(f"/tunings/{tuning.public_id}/cancel/").status_code == 404


@pytest.mark.parametrize("path", SESSION)
def test_the_tune_command_prints_what_the_page_shows(alice, monkeypatch, capsys, path):
    import json

    from django.core.management import CommandError, call_command

    import_bytes(alice, path.name, path.read_bytes())
    main = Run.objects.get(owner=alice, compaction_request=False, subagent=False)
    monkeypatch.setattr(
        "webapp.tasks.queue_tuning",
        lambda t: services.run_cells(list(t.cells.values_list("pk", flat=True))),
    )
    args = [f"--run={main.public_id}", "--owner=alice", f"--estimator={ESTIMATOR}"]
    call_command("tune", *args, "--mechanism=claude-code-auto-compact", "--wait", "--json")
    (said,) = json.loads(capsys.readouterr().out)
    (view,) = reads.mechanism_views(Tuning.objects.get())
    assert said["recommended"]["setting"] == view.setting
    assert said["recommended"]["cost"] == pytest.approx(view.chosen.cost)
    assert said["configuration"] and said["simulations"] <= said["grid_simulations"]
    with pytest.raises(CommandError, match="mechanism: unknown nothing"):
        call_command("tune", *args, "--mechanism=nothing")
    # A mechanism no chosen run's agent has is tried on every run, as the CLI does.
    call_command("tune", *args, "--mechanism=codex-auto-compact", "--wait", "--json")
    (said,) = json.loads(capsys.readouterr().out)
    assert said["mechanism"] == "codex-auto-compact" and said["runs"] == 1
    # Any policy, over the values given.
    call_command("tune", *args, "--policy=mythex", "--grid=batch=1,2", "--wait", "--json")
    (said,) = json.loads(capsys.readouterr().out)
    assert said["mechanism"] == "policy:mythex" and said["grid_simulations"] == 2
    with pytest.raises(CommandError, match="--grid: batch=x: batch: expected int"):
        call_command("tune", *args, "--policy=mythex", "--grid=batch=x")
    with pytest.raises(CommandError, match="no run given"):
        call_command("tune", "--owner=alice")


def test_a_run_at_risk_opens_the_step_where_it_asks_again(alice):
    import json

    from webapp.tuning.reads import MechanismView, _step_link

    messages = [{"role": "user", "content": "start"}]
    for n in range(8):
        args = '{"file": 0}' if n == 7 else f'{{"file": {n}}}'  # the last asks the first again
        call = {"type": "tool_call", "id": f"c{n}", "name": "Read", "arguments": args}
        messages.append(
            {"role": "assistant", "content": [call], "usage": {"input_tokens": 1000 + 2000 * n}}
        )
        messages.append(
            {
                "role": "tool",
                "content": [{"type": "tool_result", "call_id": f"c{n}", "text": "x" * 8000}],
            }
        )
    messages.append({"role": "assistant", "content": "done"})
    document = {
        "contextsim": 1,
        "runs": [
            {
                "title": "asks again",
                "format": "claude-code",
                "context_window": 200_000,
                "messages": messages,
            }
        ],
    }
    import_bytes(alice, "again.json", json.dumps(document).encode())
    run = Run.objects.get(owner=alice)
    view = MechanismView("clear-tool-uses", "", "anthropic_clear_tool_uses", 200_000, 1)
    link = _step_link(run, view, "policy=anthropic_clear_tool_uses&trigger=5000&keep=1", ESTIMATOR)
    # The request that makes the repeated call: its response is the 8th assistant message.
    assert link.startswith(f"/runs/{run.public_id}/steps/7/?policy=anthropic_clear_tool_uses")
    kept = _step_link(run, view, "policy=anthropic_clear_tool_uses&trigger=190000", ESTIMATOR)
    assert "/steps/" not in kept


@pytest.mark.parametrize("path", CAPTURE)
def test_tool_search_is_tuned_on_a_capture_chosen_by_name(alice, alice_client, path):
    """A capture's runs have no agent of their own: the form offers every mechanism
    under "other mechanisms", each then tried on every run. Claude Code's tool search
    deferring its MCP tools costs what the dashboard says with those tools deferred."""
    import_bytes(alice, path.name, path.read_bytes())
    chosen = list(Run.objects.filter(owner=alice, compaction_request=False).order_by("id"))
    form = alice_client.get("/tunings/new/", {"run": [r.public_id for r in chosen]})
    assert form.context["offered"] == {}
    assert "claude-code-tool-search" in form.context["others"]
    assert "tried on every run" in form.content.decode()
    started = alice_client.post(
        "/tunings/new/",
        {
            "run": [r.public_id for r in chosen],
            "mechanism": ["claude-code-tool-search"],
            "estimator": ESTIMATOR,
        },
    )
    assert started.status_code == 302
    tuning = Tuning.objects.get(owner=alice)
    assert tuning.cells.count() == len(chosen)
    _searched(tuning)
    (view,) = reads.mechanism_views(tuning)
    assert view.setting == {"enable_tool_search": "true"}
    deferred = sum(
        _dashboard_cost(r, "policy=claude_code_auto_compact&defer=mcp__*")
        for r in chosen
        if "mcp__" in " ".join(json_tool_names(r))
    ) + sum(
        _dashboard_cost(r, "policy=claude_code_auto_compact")
        for r in chosen
        if "mcp__" not in " ".join(json_tool_names(r))
    )
    assert view.chosen.cost == pytest.approx(deferred, abs=1e-9)
    every = sum(_dashboard_cost(r, "policy=claude_code_auto_compact") for r in chosen)
    assert view.current.cost == pytest.approx(every, abs=1e-9)
    assert view.chosen.cost < view.current.cost
    page = alice_client.get(f"/tunings/{tuning.public_id}/").content.decode()
    assert "ENABLE_TOOL_SEARCH=true" in page


def json_tool_names(run: Run) -> list[str]:
    """The tools a stored capture run's requests define."""
    from contextsim.model import ToolSpecPart
    from webapp.store.reads import stored_run

    return [
        part.name
        for message in stored_run(run).messages
        for part in message.parts
        if isinstance(part, ToolSpecPart)
    ]


@pytest.mark.parametrize("path", SESSION)
def test_any_policy_over_values_given_in_the_form(alice, alice_client, path):
    """The form's "any policy": the values typed for its parameters are searched on
    every run, and the point it recommends costs what the dashboard says under it; a
    value the policy refuses is named and nothing is saved."""
    import_bytes(alice, path.name, path.read_bytes())
    main = Run.objects.get(owner=alice, compaction_request=False, subagent=False)
    form = {"run": [main.public_id], "estimator": ESTIMATOR, "policy": "langchain_clear_tool_uses"}
    refused = alice_client.post("/tunings/new/", {**form, "grid": "keep=1, many"})
    assert refused.status_code == 400
    assert "values: keep=many: keep: expected int, got &#x27;many&#x27;" in refused.content.decode()
    assert not Tuning.objects.exists()
    for bad, said in [
        ({"grid": "trigger=40000, nan"}, "values: trigger=nan: trigger: expected int"),
        ({"policy": "", "grid": "keep=1"}, "values: choose the policy they are for"),
    ]:
        refused = alice_client.post("/tunings/new/", {**form, **bad})
        assert refused.status_code == 400 and said in refused.content.decode()
    assert not Tuning.objects.exists()
    grid = "trigger=40000, 80000, 120000\nkeep=1, 3"
    assert alice_client.post("/tunings/new/", {**form, "grid": grid}).status_code == 302
    tuning = Tuning.objects.get(owner=alice)
    assert list(tuning.spaces) == ["policy:langchain_clear_tool_uses"]
    _searched(tuning)
    (view,) = reads.mechanism_views(tuning)
    assert len(view.search.totals) == 6
    for setting, found in view.frontier:
        query = "&".join(f"{k}={v}" for k, v in setting.items())
        cost = _dashboard_cost(main, f"policy=langchain_clear_tool_uses&{query}")
        assert found.cost == pytest.approx(cost, abs=1e-9)


def main_usages(run: Run):
    """The measured usage of each response of a stored run."""
    from webapp.store.reads import stored_run

    return [m.usage for m in stored_run(run).messages if m.usage is not None]
