"""Jobs that survive a lost worker (webapp.jobs.services): a job is taken once, its
result is written only while its lease is its own, and the reaper gives back jobs whose
worker or task was lost, up to the attempts allowed, then fails them as "worker lost".
The worker processes themselves, killed for real, are in test_worker_crash.py."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from io import BytesIO

import pytest
from django.urls import reverse
from django.utils import timezone

from contextsim.analysis.sweep import Config
from contextsim.counting import skeleton
from contextsim.counting.estimators import ESTIMATORS, SHOWN_FIRST, SLOW
from contextsim.ingest import base as ingest_base
from contextsim.ingest.detect import parse_stream
from tests.web.test_import_service import NATIVE
from webapp import tasks
from webapp.ingest.uploads import services as imports
from webapp.jobs import services as jobs
from webapp.models import ImportJob, Message, Run, RunSkeleton, Sweep, SweepCell
from webapp.store.actions import derivation, saving
from webapp.store.actions import rows as message_rows
from webapp.store.cache import CACHE
from webapp.store.reads import skeleton_of
from webapp.sweeps import services as sweeps
from webapp.sweeps.services import create_sweep

pytestmark = pytest.mark.django_db


def _job(alice, body: bytes = b"") -> ImportJob:

    return imports.store_upload(alice, "log.json", BytesIO(body or json.dumps(NATIVE).encode()))


def _later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


def _sweep(alice, fleet) -> Sweep:
    return create_sweep(
        alice, fleet[:2], [Config("turns", 30_000, ())], estimator="chars4", hard_limit=40_000
    )


def test_a_job_is_taken_once_and_each_taking_counts_an_attempt(alice):
    job = _job(alice)
    assert jobs.claim(ImportJob, job.pk) == 1
    assert jobs.claim(ImportJob, job.pk) is None  # held: a second delivery does nothing
    job.refresh_from_db()
    assert job.status == "running" and job.attempts == 1 and job.lease_until > timezone.now()
    assert job.worker


def test_a_result_is_not_written_once_another_attempt_holds_the_job(alice, settings):
    job = _job(alice)
    first = jobs.claim(ImportJob, job.pk)
    assert first == 1
    found = jobs.reap(queue_empty=False, now=_later(settings.JOB_LEASE_SECONDS + 1))
    assert found.imports == [job.pk]
    assert jobs.claim(ImportJob, job.pk) == 2
    with pytest.raises(jobs.LeaseLost):
        jobs.finish(ImportJob, job.pk, first, status=ImportJob.Status.DONE)
    jobs.finish(ImportJob, job.pk, 2, status=ImportJob.Status.DONE)
    job.refresh_from_db()
    assert job.status == "done" and job.lease_until is None and job.finished is not None


def test_an_import_taken_up_again_after_its_worker_was_lost_saves_its_runs_once(alice, settings):
    job = _job(alice)
    jobs.claim(ImportJob, job.pk)  # a worker took it, then died
    assert imports.run_import(job.pk).status == "running"  # a redelivery leaves it held
    assert not Run.objects.exists()
    found = jobs.reap(queue_empty=False, now=_later(settings.JOB_LEASE_SECONDS + 1))
    assert found.imports == [job.pk]
    done = imports.run_import(job.pk)
    assert done.status == "done" and done.attempts == 2
    runs = Run.objects.filter(upload=job.upload).count()
    assert runs == len(NATIVE["runs"])
    assert imports.run_import(job.pk).status == "done"  # delivered once more: nothing
    assert Run.objects.filter(upload=job.upload).count() == runs


def test_a_job_whose_worker_keeps_dying_fails_as_worker_lost(alice, settings):
    settings.JOB_ATTEMPTS = 2
    job = _job(alice)
    for attempt in (1, 2):
        assert jobs.claim(ImportJob, job.pk) == attempt
        found = jobs.reap(queue_empty=False, now=_later(settings.JOB_LEASE_SECONDS + 1))
    assert found.failed == 1 and found.imports == []
    job.refresh_from_db()
    assert job.status == "failed" and job.error.startswith("worker lost")
    assert "2 times" in job.error and job.finished is not None


def test_a_live_lease_is_left_alone(alice, settings):
    job = _job(alice)
    jobs.claim(ImportJob, job.pk)
    found = jobs.reap(queue_empty=True, now=_later(settings.JOB_LEASE_SECONDS - 1))
    assert found.imports == [] and found.failed == 0
    assert ImportJob.objects.get(pk=job.pk).status == "running"


def test_queued_jobs_are_sent_again_only_when_the_broker_queue_is_empty(alice, settings):
    job = _job(alice)
    later = _later(settings.JOB_LEASE_SECONDS + 1)
    # Tasks still wait in the broker: the job's may be among them.
    assert jobs.reap(queue_empty=False, now=later).imports == []
    # None wait, yet the job was never taken: its task was lost with a worker.
    assert jobs.reap(queue_empty=True, now=later).imports == [job.pk]
    # Sent again just now: not again at once.
    assert jobs.reap(queue_empty=True, now=later + timedelta(seconds=1)).imports == []


def test_a_sweep_whose_last_cells_fail_as_worker_lost_is_finished(alice, fleet, settings):
    settings.JOB_ATTEMPTS = 1
    sweep = _sweep(alice, fleet)
    first, second = sweep.cells.order_by("pk")
    sweeps.run_cell(first.pk)
    assert jobs.claim(SweepCell, second.pk) == 1
    found = jobs.reap(queue_empty=False, now=_later(settings.JOB_LEASE_SECONDS + 1))
    assert found.failed == 1
    sweep.refresh_from_db()
    assert sweep.finished is not None
    assert SweepCell.objects.get(pk=second.pk).error.startswith("worker lost")


def test_a_cell_delivered_twice_is_computed_once(alice, fleet):
    cell = _sweep(alice, fleet).cells.first()
    assert cell is not None
    sweeps.run_cell(cell.pk)
    cell.refresh_from_db()
    finished = cell.finished
    sweeps.run_cell(cell.pk)
    cell.refresh_from_db()
    assert cell.status == "done" and cell.attempts == 1 and cell.finished == finished


def test_pages_say_retrying_with_the_attempt(alice, alice_client, fleet, settings):
    job = _job(alice)
    jobs.claim(ImportJob, job.pk)
    jobs.reap(queue_empty=False, now=_later(settings.JOB_LEASE_SECONDS + 1))
    page = alice_client.get(reverse("import-status", args=[job.public_id])).content.decode()
    assert "Retrying (attempt 2 of 3)" in page
    sweep = _sweep(alice, fleet)
    cell = sweep.cells.first()
    assert cell is not None
    jobs.claim(SweepCell, cell.pk)
    jobs.reap(queue_empty=False, now=_later(settings.JOB_LEASE_SECONDS + 1))
    page = alice_client.get(reverse("sweep", args=[sweep.public_id])).content.decode()
    assert "1 retrying: a worker working on it was lost" in page


def test_the_reaper_task_sends_lost_jobs_to_the_workers_again(alice, settings, monkeypatch):
    settings.JOB_LEASE_SECONDS = 2
    job = _job(alice)
    ImportJob.objects.filter(pk=job.pk).update(sent=_later(-10))
    sent: list[int] = []
    monkeypatch.setattr(tasks.import_upload, "delay", sent.append)
    monkeypatch.setattr(tasks, "_queue_empty", lambda: True)
    tasks.reap_jobs()
    assert sent == [job.pk]


def test_a_run_still_being_imported_is_seen_by_no_page_search_or_api(alice, alice_client):

    parsed = parse_stream("log.json", BytesIO(json.dumps(NATIVE).encode()))
    staged = saving.do_stage_run(parsed.runs[0], owner=alice, upload=None)
    saving.do_fill_run(staged, parsed.runs[0])
    assert not Run.objects.filter(pk=staged.pk).exists()
    assert Run.all_objects.filter(pk=staged.pk, ready=False).exists()
    assert alice_client.get(reverse("run", args=[staged.public_id])).status_code == 404
    listing = alice_client.get(reverse("runs")).content.decode()
    assert staged.public_id not in listing
    found = alice_client.get(reverse("runs"), {"q": "read the file"}).content.decode()
    assert staged.public_id not in found
    saving.do_publish_runs([staged], alice)
    assert alice_client.get(reverse("run", args=[staged.public_id])).status_code == 200
    message_rows.index_run(staged.pk)  # what the import job does once the run is shown
    found = alice_client.get(reverse("runs"), {"q": "read the file"}).content.decode()
    assert staged.public_id in found


def test_an_import_that_fails_midway_leaves_nothing_behind(alice, monkeypatch):

    job = _job(alice)
    real = saving.Filling.finish
    calls: list[int] = []

    def second_fails(filling, facts):
        calls.append(filling.stored.pk)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        real(filling, facts)

    monkeypatch.setattr(saving.Filling, "finish", second_fails)
    done = imports.run_import(job.pk)
    assert done.status == "failed" and "internal error" in done.error
    assert Run.all_objects.count() == 0 and Message.objects.count() == 0


def test_what_a_lost_attempt_left_unseen_is_dropped_once_the_job_fails_for_good(alice, settings):

    settings.JOB_ATTEMPTS = 1
    job = _job(alice)
    jobs.claim(ImportJob, job.pk)
    parsed = parse_stream("log.json", BytesIO(json.dumps(NATIVE).encode()))
    saving.do_stage_run(parsed.runs[0], owner=alice, upload=job.upload)  # then the worker died
    assert Run.all_objects.filter(upload=job.upload).count() == 1
    found = jobs.reap(queue_empty=False, now=_later(settings.JOB_LEASE_SECONDS + 1))
    assert found.failed == 1
    assert Run.all_objects.filter(upload=job.upload).count() == 0


def test_a_job_left_running_before_leases_existed_is_taken_up_again(alice):
    job = _job(alice)
    ImportJob.objects.filter(pk=job.pk).update(status="running", attempts=0, lease_until=None)
    assert jobs.reap(queue_empty=False).imports == [job.pk]


def test_a_second_import_again_leaves_a_job_already_taken_alone(alice):
    job = _job(alice)
    assert jobs.claim(ImportJob, job.pk) == 1
    imports.import_again(job)
    job.refresh_from_db()
    assert job.status == "running" and job.attempts == 1 and not job.again


def test_a_big_staged_run_is_deleted_a_batch_at_a_time(alice, monkeypatch):
    monkeypatch.setattr(saving, "STAGE_ROWS", 3)
    parsed = parse_stream("log.json", BytesIO(json.dumps(NATIVE).encode()))
    staged = saving.do_stage_run(parsed.runs[0], owner=alice, upload=None)
    saving.do_fill_run(staged, parsed.runs[0])
    assert Message.objects.filter(run_id=staged.pk).count() == 4  # two batches
    saving.do_drop_runs([staged])
    assert not Run.all_objects.filter(pk=staged.pk).exists()
    assert not Message.objects.filter(run_id=staged.pk).exists()


def test_publishing_refuses_runs_that_were_deleted_meanwhile(alice):
    parsed = parse_stream("log.json", BytesIO(json.dumps(NATIVE).encode()))
    staged = [saving.do_stage_run(r, owner=alice, upload=None) for r in parsed.runs]
    saving.do_drop_runs(staged[:1])
    with pytest.raises(RuntimeError, match="1 staged run"):
        saving.do_publish_runs(staged, alice)


@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_lease_was_taken_over_stops_between_batches(alice, settings):
    settings.JOB_LEASE_SECONDS = 2  # renewed every 0.67 s
    job = _job(alice)
    attempt = jobs.claim(ImportJob, job.pk)
    assert attempt == 1
    with jobs.holding(ImportJob, job.pk, attempt) as hold:
        hold.check()  # held: goes on
        # The reaper gave it to attempt 2 meanwhile (this worker was thought lost).
        ImportJob.objects.filter(pk=job.pk).update(attempts=2)
        for _ in range(50):
            if hold.lost.is_set():
                break
            time.sleep(0.1)
        with pytest.raises(jobs.LeaseLost):
            hold.check()


@pytest.mark.django_db(transaction=True)
def test_one_lease_of_a_batch_taken_over_leaves_the_others_renewed(alice, settings):
    settings.JOB_LEASE_SECONDS = 2  # renewed every 0.67 s
    first, second = _job(alice), _job(alice)
    held = jobs.claim_all(ImportJob, [first.pk, second.pk])
    assert held == {first.pk: 1, second.pk: 1}
    with jobs.holding_all(ImportJob, held) as hold:
        ImportJob.objects.filter(pk=first.pk).update(attempts=2)  # taken over
        for _ in range(50):
            if hold.lost.is_set():
                break
            time.sleep(0.1)
        renewed = ImportJob.objects.get(pk=second.pk).lease_until
        time.sleep(1.0)  # one more renewal
        assert hold.held == {second.pk: 1}
        assert ImportJob.objects.get(pk=second.pk).lease_until > renewed


def test_the_upload_page_shows_how_far_a_running_import_is(alice, alice_client, monkeypatch):
    monkeypatch.setattr(saving, "STAGE_ROWS", 1)
    monkeypatch.setattr(ingest_base, "PIECE", 1)
    job = _job(alice)
    url = reverse("import-status", args=[job.public_id])
    seen: list[str] = []
    real = imports._progress

    def spy(job, stage, written=0, total=0):
        real(job, stage, written, total)
        seen.append(" ".join(alice_client.get(url).content.decode().split()))

    monkeypatch.setattr(imports, "_progress", spy)
    done = imports.run_import(job.pk)
    assert done.status == "done" and done.messages_written == done.messages_total == 5
    assert "Reading the file…" in seen[0]
    assert any("Reading, counting and saving messages: 2 so far…" in page for page in seen)
    assert any("Saving the skeletons…" in page for page in seen)
    assert any("Indexing the text for search: 0 of 5 messages…" in page for page in seen)
    # Shown before the tokenizers count: its run is a link while they do.
    counting = [page for page in seen if "Counting tokens with the real tokenizers" in page]
    assert counting and all("ready to browse" in page for page in counting)
    assert "of 5 messages" in counting[-1]
    for run in done.upload.runs.all():
        assert reverse("run", args=[run.public_id]) in counting[-1]


def test_a_staged_run_gets_every_estimators_skeleton_equal_to_one_built_from_the_store(alice):

    parsed = parse_stream("log.json", BytesIO(json.dumps(NATIVE).encode()))
    staged = saving.do_stage_run(parsed.runs[0], owner=alice, upload=None)
    saving.do_fill_run(staged, parsed.runs[0])
    saving.do_publish_runs([staged], alice)
    # Shown with one skeleton and its counts; the other estimators' come after.
    first = {s.estimator for s in RunSkeleton.objects.filter(run=staged)}
    assert first == {SHOWN_FIRST} and set(staged.counting) == set(ESTIMATORS) - first
    assert set(SLOW) <= set(staged.counting)
    for counts in Message.objects.filter(run=staged).values_list("counts", flat=True):
        assert set(counts) == {SHOWN_FIRST}
    derivation.do_count_rest(Run.objects.get(pk=staged.pk))
    stored = {s.estimator: s.data for s in RunSkeleton.objects.filter(run=staged)}
    assert sorted(stored) == sorted(ESTIMATORS)
    assert Run.objects.get(pk=staged.pk).counting == []
    for counts in Message.objects.filter(run=staged).values_list("counts", flat=True):
        assert set(counts) == set(ESTIMATORS)
    RunSkeleton.objects.filter(run=staged, estimator="o200k").delete()
    staged.refresh_from_db()
    CACHE.clear()
    rebuilt = json.loads(json.dumps(skeleton.to_dict(skeleton_of(staged, "o200k"))))
    assert rebuilt == stored["o200k"]


def test_a_tuning_cell_whose_worker_is_lost_is_searched_again_then_failed(alice, fleet, settings):
    from webapp.models import Tuning, TuningCell
    from webapp.tuning import services as tunings

    Run.objects.filter(pk=fleet[0].pk).update(format="claude-code")
    run = Run.objects.get(pk=fleet[0].pk)
    tuning = tunings.create_tuning(
        alice, [run], estimator="chars4", only=["claude-code-auto-compact"]
    )
    (cell,) = TuningCell.objects.filter(tuning=tuning)
    assert jobs.claim(TuningCell, cell.pk) == 1  # a worker takes it, then is lost
    found = jobs.reap(queue_empty=False, now=_later(settings.JOB_LEASE_SECONDS + 1))
    assert found.tuning_cells == [cell.pk]  # sent to the workers again
    assert jobs.claim(TuningCell, cell.pk) == 2
    settings.JOB_ATTEMPTS = 2
    found = jobs.reap(queue_empty=False, now=_later(2 * settings.JOB_LEASE_SECONDS + 2))
    assert found.failed == 1
    assert TuningCell.objects.get(pk=cell.pk).error.startswith("worker lost")
    assert Tuning.objects.get(pk=tuning.pk).finished is not None
