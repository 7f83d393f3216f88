"""Sweeps in the web app: the form, creation (all or nothing), one task per cell, the
worker's service, and the page while it runs and when it is done."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from webapp.models import Run, Sweep, SweepCell
from webapp.sweeps import services as sweeps

pytestmark = pytest.mark.django_db

# Small chapters keep the fleet fast; limits scaled to match (chars4 counts).
LIMITS = {"budgets": "10000 30000", "hard_limit": "40000", "estimator": "chars4"}


class Queued(list[int]):
    """The cell ids queued, and the batches (one task each) they were queued in."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[int]] = []

    def batch(self, ids: list[int]) -> None:
        self.batches.append(list(ids))
        self.extend(ids)


@pytest.fixture
def queued(monkeypatch) -> Queued:
    found = Queued()
    monkeypatch.setattr("webapp.tasks.run_sweep_cells.delay", found.batch)
    monkeypatch.setattr("webapp.tasks.run_sweep_cell.delay", found.append)
    return found


def _post(client: Client, chosen: list[Run], **fields: str):
    data = {"runs": [r.public_id for r in chosen], "policies": ["turns", "mythex"], **LIMITS}
    data.update(fields)
    return client.post(reverse("sweep-new"), data)


def test_the_form_preselects_a_collections_runs(alice_client, fleet):
    collection = fleet[0].collection
    assert collection is not None
    page = alice_client.get(reverse("sweep-new"), {"collection": collection.public_id})
    html = page.content.decode()
    assert page.status_code == 200
    for run in fleet:
        assert f'value="{run.public_id}" checked' in html
    assert 'value="turns" id="id_policies_2" checked' in html
    assert "mythex" in html and "deepagents" in html  # choices from the registry


def test_a_sweep_queues_one_task_per_run_with_each_of_its_configurations(
    alice_client, fleet, queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(alice_client, fleet)
    sweep = Sweep.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/sweeps/{sweep.public_id}/"
    assert len(sweep.configs) == 4  # 2 policies x 2 budgets
    assert sweep.cells.count() == 8 * 4
    assert sorted(queued) == sorted(sweep.cells.values_list("pk", flat=True))
    assert len(queued.batches) == 8
    for batch in queued.batches:
        assert len(batch) == 4 and len({SweepCell.objects.get(pk=c).run_id for c in batch}) == 1


def test_the_page_polls_while_cells_are_open_and_shows_the_outcome_when_done(
    alice_client, fleet, queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        _post(alice_client, fleet)
    sweep = Sweep.objects.get()
    url = reverse("sweep", args=[sweep.public_id])
    running = alice_client.get(url).content.decode()
    assert 'hx-trigger="every 1s"' in running and "0 of 32 cells computed" in running
    assert "appear here once every cell is computed" in running
    polled = alice_client.get(url, HTTP_HX_REQUEST="true")
    assert "HX-Refresh" not in polled and "0 of 32 cells computed" in polled.content.decode()
    for cell_id in queued:
        sweeps.run_cell(cell_id)
    sweep.refresh_from_db()
    assert sweep.finished is not None
    poll = alice_client.get(url, HTTP_HX_REQUEST="true")
    assert poll["HX-Refresh"] == "true"  # the poll reloads the page once all are done
    assert "every 1s" not in poll.content.decode()
    assert len(poll.content) < 1_000  # a poll never carries the results
    done = alice_client.get(url).content.decode()
    assert "every 1s" not in done and "Done: 32 of 32 cells" in done
    outcomes = {
        (sweep.configs[c.config]["policy"], sweep.configs[c.config]["budget"]): c.outcome
        for c in sweep.cells.all()
    }

    # The seed incident at this scale: turns never cuts a subagent's single turn, so
    # every run is rejected; mythex clears old chapters, and at a 10,000 budget every run
    # finishes. At 30,000 its chars4 count of the Russian chapters says the requests fit
    # while the provider's count (reconciled with the runs' usage, as the dashboard
    # shows them) passes the 40,000 hard limit: the seed incident itself.
    def cells(policy: str, budget: int) -> list[dict]:
        chosen = sweep.cells.all()
        return [
            c.outcome
            for c in chosen
            if (sweep.configs[c.config]["policy"], sweep.configs[c.config]["budget"])
            == (policy, budget)
        ]

    assert all(o["rejected_steps"] > 0 for o in cells("turns", 10_000) + cells("turns", 30_000))
    assert all(o["rejected_steps"] == 0 for o in cells("mythex", 10_000))
    assert all(o["rejected_steps"] > 0 for o in cells("mythex", 30_000))
    assert outcomes  # every configuration has cells
    assert "0 of 8" in done and "8 of 8" in done
    first = fleet[0]
    assert f"/runs/{first.public_id}/?policy=turns&amp;budget=10000&amp;hard_limit=40000" in done
    assert '"sweep-finished"' in done  # figure data for the charts
    assert '"frontier-cost"' in done and '"frontier-peak"' in done


def test_a_cell_delivered_twice_is_computed_once(alice_client, fleet, queued):
    _post(alice_client, fleet[:1], policies=["mythex"], budgets="20000")
    (cell,) = SweepCell.objects.all()
    sweeps.run_cell(cell.pk)
    cell.refresh_from_db()
    first = (cell.status, cell.finished, cell.outcome)
    SweepCell.objects.filter(pk=cell.pk).update(outcome={"kept": "as computed"})
    sweeps.run_cell(cell.pk)
    cell.refresh_from_db()
    assert first[0] == "done" and first[2]["steps"] == 41
    assert (cell.status, cell.finished, cell.outcome) == ("done", first[1], {"kept": "as computed"})


def test_a_runs_cells_are_taken_in_one_claim_leaving_those_another_worker_holds(
    alice_client, fleet, queued, django_assert_max_num_queries
):
    _post(alice_client, fleet[:1], budgets="10000 20000 30000 40000")
    batch = list(SweepCell.objects.order_by("pk").values_list("pk", flat=True))  # one run's
    held, done, *free = batch
    SweepCell.objects.filter(pk=held).update(status="running", worker="elsewhere", attempts=1)
    sweeps.run_cell(done)
    before = SweepCell.objects.get(pk=done).finished
    # One claim (4 statements), the cells and their owner's estimators (2), the run's fit
    # once (1: a captured run of its model to borrow a scale from), one write per cell in
    # one transaction (6 + 2) and the sweep's check (1): not a claim nor a fit per cell.
    with django_assert_max_num_queries(16):
        sweeps.run_cells(batch)
    found = {c.pk: c for c in SweepCell.objects.all()}
    assert (found[held].status, found[held].worker) == ("running", "elsewhere")
    assert found[done].finished == before  # not computed again
    assert all(found[i].status == "done" and found[i].attempts == 1 for i in free)
    assert Sweep.objects.get().finished is None  # the held cell is still open


def test_a_cell_whose_lease_was_lost_mid_batch_is_not_written_but_the_others_are(
    alice_client, fleet, queued, monkeypatch
):
    _post(alice_client, fleet[:1], policies=["mythex"], budgets="10000 20000")
    batch = list(SweepCell.objects.order_by("pk").values_list("pk", flat=True))
    compute = sweeps._compute

    def lost_meanwhile(cell, counters, fits):
        if cell.pk == batch[0]:  # another attempt took it over while this one worked
            SweepCell.objects.filter(pk=cell.pk).update(attempts=7)
        return compute(cell, counters, fits)

    monkeypatch.setattr(sweeps, "_compute", lost_meanwhile)
    sweeps.run_cells(batch)
    first, second = (SweepCell.objects.get(pk=i) for i in batch)
    assert (first.status, first.attempts, first.outcome) == ("running", 7, None)
    assert second.status == "done" and second.outcome["steps"] == 41


def test_cells_whose_estimators_cannot_be_read_fail_saying_why(
    alice_client, fleet, queued, monkeypatch
):
    _post(alice_client, fleet[:1], policies=["mythex"], budgets="10000 20000")
    batch = list(SweepCell.objects.order_by("pk").values_list("pk", flat=True))

    def broken(owner):
        raise RuntimeError("the custom rates table is gone")

    monkeypatch.setattr(sweeps, "estimators_for", broken)
    sweeps.run_cells(batch)
    found = SweepCell.objects.order_by("pk")
    assert [(c.status, c.error) for c in found] == [
        ("failed", "internal error: the custom rates table is gone")
    ] * 2
    assert Sweep.objects.get().finished is not None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"budgets": "100000 lots"},
            "budgets: expected whole numbers of tokens, got &#x27;lots&#x27;",
        ),
        ({"budgets": "0"}, "budgets: expected between 1 and 100,000,000 tokens, got 0"),
        ({"policies": []}, "policies: choose at least one policy"),
        ({"runs": []}, "runs: choose at least one run"),
        ({"params": "mythex.keep_results=many"}, "mythex: keep_results: expected int"),
        ({"params": "keep_results=6"}, "line 1: expected policy.parameter=value"),
        ({"params": "deepagents.keep_messages=6"}, "deepagents is not among the policies"),
        ({"hard_limit": "-5"}, "hard limit:"),
        ({"estimator": "words"}, "Select a valid choice. words is not one of the available"),
    ],
)
def test_bad_sweep_input_is_named_and_nothing_is_saved(
    alice_client, fleet, queued, fields, message
):
    response = _post(alice_client, fleet, **fields)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert Sweep.objects.count() == 0 and SweepCell.objects.count() == 0 and queued == []


def test_runs_of_someone_else_cannot_be_swept(fleet, bob, queued):
    client = Client()
    client.force_login(bob)
    response = _post(client, fleet)
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert Sweep.objects.count() == 0


def test_a_sweep_is_private_to_its_owner(alice_client, fleet, bob, queued):
    _post(alice_client, fleet)
    sweep = Sweep.objects.get()
    client = Client()
    client.force_login(bob)
    assert client.get(reverse("sweep", args=[sweep.public_id])).status_code == 404
    assert sweep.title not in client.get(reverse("sweeps")).content.decode()
    anonymous = Client().get(reverse("sweep", args=[sweep.public_id]))
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")


def test_the_list_shows_progress_and_an_empty_state(alice_client, fleet, queued):
    assert "No sweeps yet" in alice_client.get(reverse("sweeps")).content.decode()
    _post(alice_client, fleet, title="<b>fleet</b> at four budgets")
    _post(alice_client, fleet[:1], title="the newest")
    html = alice_client.get(reverse("sweeps")).content.decode()
    assert "&lt;b&gt;fleet&lt;/b&gt; at four budgets" in html
    assert "0 of 32" in html and "0 of 4" in html
    assert html.index("the newest") < html.index("four budgets")


def test_a_failed_cell_is_shown_with_its_reason(alice_client, fleet, queued):
    _post(alice_client, fleet[:1], policies=["mythex"], budgets="20000")
    sweep = Sweep.objects.get()
    Sweep.objects.filter(pk=sweep.pk).update(estimator="custom-gone")
    (cell,) = sweep.cells.all()
    sweeps.run_cell(cell.pk)
    cell.refresh_from_db()
    assert cell.status == "failed" and cell.error == "estimator custom-gone no longer exists"
    html = alice_client.get(reverse("sweep", args=[sweep.public_id])).content.decode()
    assert "1 failed" in html and "estimator custom-gone no longer exists" in html


def test_the_sweep_command_starts_a_sweep_and_names_bad_input(fleet, queued, capsys):
    from django.core.management import CommandError, call_command

    ids = [f"--run={r.public_id}" for r in fleet[:2]]
    common = ["--policy=mythex", "--owner=alice"]
    call_command("sweep", *ids, *common, "--budgets=20000 30000", "--estimator=chars4")
    sweep = Sweep.objects.get()
    assert capsys.readouterr().out.strip() == f"/sweeps/{sweep.public_id}/"
    assert sweep.cells.count() == 4 and sweep.owner.username == "alice"
    bad = [
        (["--budgets=1000"], "no run given: give --run or --collection public ids"),
        ([*ids, "--run=typo", "--budgets=1000"], "not found, or not visible to alice: typo"),
        (["--collection=nope", "--budgets=1000"], "not visible to alice: collection nope"),
        ([*ids, "--budgets=10k"], "budgets: expected whole numbers of tokens, got '10k'"),
        ([*ids, "--budgets=1000", "--estimator=words"], "unknown estimator 'words'"),
        ([*ids, "--budgets=1000", "--set=mythex.keep_results=x"], "mythex: keep_results"),
    ]
    for args, message in bad:
        with pytest.raises(CommandError, match=message):
            call_command("sweep", *args, *common)
    assert Sweep.objects.count() == 1
    with pytest.raises(CommandError, match="--owner: no user 'alcie'"):
        call_command("sweep", *ids, "--policy=mythex", "--owner=alcie", "--budgets=1000")


def test_a_cell_that_crashes_is_failed_and_the_sweep_still_finishes(
    alice_client, fleet, queued, monkeypatch
):
    _post(alice_client, fleet[:1], policies=["mythex"], budgets="20000")
    sweep = Sweep.objects.get()

    def boom(*args, **kwargs):
        raise RuntimeError("database is locked")

    monkeypatch.setattr("webapp.sweeps.services.simulate", boom)
    (cell,) = sweep.cells.all()
    sweeps.run_cell(cell.pk)
    cell.refresh_from_db()
    sweep.refresh_from_db()
    assert cell.status == "failed" and cell.error == "internal error: database is locked"
    assert sweep.finished is not None
    html = alice_client.get(reverse("sweep", args=[sweep.public_id])).content.decode()
    assert "every cell failed" in html and "waiting for the workers" not in html


def test_a_sweep_no_worker_takes_says_so_after_a_while(alice_client, fleet, queued):
    from datetime import timedelta

    from django.utils import timezone

    _post(alice_client, fleet[:1], policies=["mythex"], budgets="20000")
    sweep = Sweep.objects.get()
    url = reverse("sweep", args=[sweep.public_id])
    assert "No worker has taken a cell yet" not in alice_client.get(url).content.decode()
    Sweep.objects.filter(pk=sweep.pk).update(created=timezone.now() - timedelta(minutes=1))
    polled = alice_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "No worker has taken a cell yet: is a Celery worker running?" in polled


def test_a_sweep_too_big_or_over_the_queue_cap_is_refused_saying_so(
    alice_client, fleet, queued, settings
):
    cells = len(fleet) * 2 * 2  # runs x policies x budgets
    settings.MAX_SWEEP_CELLS = cells - 1
    too_big = _post(alice_client, fleet)
    assert too_big.status_code == 400
    assert f"{cells} cells; at most {cells - 1} in one sweep" in too_big.content.decode()
    settings.MAX_SWEEP_CELLS, settings.MAX_QUEUED_CELLS = cells, cells + 1
    assert _post(alice_client, fleet).status_code == 302
    second = _post(alice_client, fleet)
    assert second.status_code == 400
    said = f"{cells} cells of your sweeps are still waiting; at most {cells + 1}"
    assert said in second.content.decode()
    assert Sweep.objects.count() == 1 and SweepCell.objects.count() == cells


def test_a_sweep_cell_shows_the_numbers_of_the_dashboard_it_opens(
    alice, alice_client, corpus, queued, django_capture_on_commit_callbacks
):
    # A real session with measured usage: the dashboard reconciles its sizes with the
    # usage; the cell must count the same sizes, not the estimator's.
    from django.http import QueryDict

    from contextsim.analysis.problems import detect
    from contextsim.analysis.sweep import outcome
    from tests.web.test_import_service import import_bytes
    from webapp.dashboard import state as viewstate
    from webapp.dashboard.analysis import analyse

    data = (corpus / "claude_code" / "codemie_session-624a4a58.jsonl").read_bytes()
    import_bytes(alice, "s.jsonl", data)
    run = Run.objects.get(format="claude-code", subagent=False, compaction_request=False)
    fields = {"budgets": "100000", "hard_limit": "200000", "estimator": "o200k"}
    with django_capture_on_commit_callbacks(execute=True):
        alice_client.post(
            reverse("sweep-new"), {"runs": [run.public_id], "policies": ["mythex"], **fields}
        )
    (cell,) = SweepCell.objects.filter(run=run)
    sweeps.run_cell(cell.pk)
    cell.refresh_from_db()
    page = alice_client.get(reverse("sweep", args=[cell.sweep.public_id])).content.decode()
    link = page.split(f"/runs/{run.public_id}/?")[1].split('"')[0].replace("&amp;", "&")
    state = viewstate.read_state(
        QueryDict(link), None, viewstate.defaults_for(run.model, run.context_window)
    )
    shown = analyse(run, state, alone=True)
    assert shown.reconciliation is not None  # the dashboard reconciles this run
    assert cell.outcome == outcome(shown.main, detect(shown.main)).to_dict()
