"""An import shows its runs once counted by the fast estimators; the real tokenizers
(estimators.SLOW) count after, the dashboard showing their calibrated stand-ins until
then, and a worker lost while they count costs no second import."""

from __future__ import annotations

import json
from datetime import timedelta
from io import BytesIO

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from contextsim.counting.estimators import ESTIMATORS, SHOWN_FIRST, SLOW, STAND_INS, count_message
from contextsim.counting.skeleton import from_dict
from tests.ingest.test_pieces import LATE_LINE_SESSION
from tests.web.test_import_service import NATIVE
from webapp.estimators.reads import request_rows
from webapp.ingest.uploads import services as imports
from webapp.jobs import services as jobs
from webapp.models import ImportJob, Message, Run, RunSkeleton
from webapp.store.actions import derivation
from webapp.store.cache import CACHE
from webapp.store.reads import skeleton_of, stored_run

MIXED = {
    "contextsim": 1,
    "runs": [
        {
            "title": "mixed scripts",
            "messages": [
                {"role": "user", "content": "Прочитай файл и ответь по-русски, пожалуйста. " * 20},
                {"role": "assistant", "content": "好的我读了这个文件。" * 30},
                {"role": "user", "content": "and now in English, with code: def f(x): return x"},
                {"role": "assistant", "content": "Done."},
            ],
        }
    ],
}


def _upload(owner, data) -> ImportJob:
    return imports.store_upload(owner, "log.json", BytesIO(json.dumps(data).encode()))


def _imported_looking_first(owner, data, monkeypatch, look) -> ImportJob:
    """The import of `data`, `look(run)` called for each run once it is shown and
    before the estimators left count it."""
    real = derivation.do_count_rest

    def first(run, counted=lambda n: None):
        look(run)
        real(run, counted)

    monkeypatch.setattr(derivation, "do_count_rest", first)
    return imports.run_import(_upload(owner, data).pk)


def test_the_dashboard_shows_the_calibrated_stand_in_while_the_tokenizers_count(
    alice, alice_client, monkeypatch
):
    seen: dict[str, str] = {}

    def look(run):
        built = RunSkeleton.objects.filter(run=run).values_list("estimator", flat=True)
        seen["built"] = set(built)
        seen["during"] = alice_client.get(reverse("run", args=[run.public_id])).content.decode()
        seen["requests"] = alice_client.get(
            reverse("run-requests", args=[run.public_id])
        ).content.decode()

    done = _imported_looking_first(alice, MIXED, monkeypatch, look)
    assert done.status == ImportJob.Status.DONE and done.shown is not None
    run = done.upload.runs.get()
    during = seen["during"]
    # One skeleton is built before the run is shown: the one it is first shown with.
    assert seen["built"] == {SHOWN_FIRST} == {STAND_INS["o200k"]}
    assert "still being counted with o200k" in during
    assert f"{STAND_INS['o200k']} tokens" in during
    # Left out of the estimates per request rather than shown as 0.
    later = ", ".join(n for n in ESTIMATORS if n != SHOWN_FIRST)
    assert f"still being counted with {later}" in seen["requests"]
    assert "tiktoken o200k_base" not in seen["requests"]
    after = alice_client.get(reverse("run", args=[run.public_id])).content.decode()
    assert "still being counted" not in after and "· o200k tokens ·" in after
    assert Run.objects.get(pk=run.pk).counting == []


def test_the_stand_in_counts_differ_from_the_tokenizer_on_non_english_text(alice):
    job = imports.run_import(_upload(alice, MIXED).pk)
    run = job.upload.runs.get()
    stored = {s.estimator: s.data["tokens"] for s in RunSkeleton.objects.filter(run=run)}
    assert set(stored) == set(ESTIMATORS)
    # What the notice warns about: the stand-in is a model, not the tokenizer.
    assert stored["o200k"] != stored[STAND_INS["o200k"]]
    for counts in Message.objects.filter(run=run).values_list("counts", flat=True):
        assert set(counts) == set(ESTIMATORS)


def test_a_worker_lost_while_counting_is_followed_by_counting_on_not_a_second_import(
    alice, monkeypatch
):
    job = _upload(alice, NATIVE)
    real = derivation.do_count_rest
    calls = []

    def lose_the_lease_once(run, counted=lambda n: None):
        calls.append(run.pk)
        if len(calls) == 1:
            raise jobs.LeaseLost("the reaper gave it to another attempt")
        real(run, counted)

    monkeypatch.setattr(derivation, "do_count_rest", lose_the_lease_once)
    first = imports.run_import(job.pk)
    assert first.status == ImportJob.Status.RUNNING and first.stage == "counting"
    shown = list(Run.objects.filter(upload=first.upload).values_list("pk", flat=True))
    assert len(shown) == 2  # browsable already, both runs of the file
    # What the reaper does for a lease that ran out.
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.QUEUED, lease_until=None)
    again = imports.run_import(job.pk)
    assert again.status == ImportJob.Status.DONE and again.attempts == 2
    assert list(Run.objects.filter(upload=first.upload).values_list("pk", flat=True)) == shown
    assert Run.all_objects.filter(upload=first.upload).count() == 2
    messages = sum(len(r["messages"]) for r in NATIVE["runs"])
    assert Message.objects.filter(run__upload=first.upload).count() == messages
    for run in Run.objects.filter(upload=first.upload):
        assert run.counting == []
        assert {s.estimator for s in run.skeletons.all()} == set(ESTIMATORS)


def test_an_import_failed_for_good_while_counting_keeps_its_runs_and_counts_on_first_use(
    alice, alice_client, monkeypatch
):
    job = _upload(alice, MIXED)
    monkeypatch.setattr(
        derivation,
        "do_count_rest",
        lambda run, counted=None: (_ for _ in ()).throw(jobs.LeaseLost()),
    )
    imports.run_import(job.pk)
    expired = timezone.now() - timedelta(seconds=1)
    ImportJob.objects.filter(pk=job.pk).update(attempts=settings.JOB_ATTEMPTS, lease_until=expired)
    jobs.reap(queue_empty=False)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE and job.error == ""
    assert "worker lost" in job.warnings[-1] and "in the background" in job.warnings[-1]
    run = job.upload.runs.get()
    assert run.counting == []
    page = alice_client.get(reverse("run", args=[run.public_id])).content.decode()
    assert "still being counted" not in page and "· o200k tokens ·" in page
    assert not RunSkeleton.objects.filter(run=run, estimator="o200k").exists()  # the view
    monkeypatch.undo()
    derivation.do_derive_pending()  # and the periodic job stores it
    assert RunSkeleton.objects.filter(run=run, estimator="o200k").exists()
    status = alice_client.get(reverse("import-status", args=[job.public_id])).content.decode()
    assert "Not imported" not in status and run.public_id in status


def test_slow_estimators_are_the_tokenizers_and_each_has_a_fast_stand_in():
    assert set(SLOW) == {"o200k", "cl100k"}
    assert all(STAND_INS[name] in ESTIMATORS for name in SLOW)


def test_a_big_native_document_is_imported_as_parsed_with_the_runs_a_small_one_gives(
    alice, bob, monkeypatch
):
    from contextsim.ingest import base as formats_base
    from contextsim.systems.native import format as native

    doc = json.loads(json.dumps(NATIVE))
    doc["runs"][0]["messages"] *= 25  # 100 messages in pieces of 7
    body = json.dumps(doc, ensure_ascii=False).encode()
    small = imports.run_import(imports.store_upload(alice, "a.json", BytesIO(body)).pk)
    monkeypatch.setattr(formats_base, "LAZY_BYTES", 0)
    monkeypatch.setattr(native, "PIECE", 7)
    big = imports.run_import(imports.store_upload(bob, "a.json", BytesIO(body)).pk)
    assert small.status == big.status == ImportJob.Status.DONE
    assert (small.format, small.warnings) == (big.format, big.warnings)

    def stored(job):
        runs = list(job.upload.runs.order_by("pk"))
        fields = ("title", "session_id", "message_count", "request_count", "peak_measured_context")
        facts = [[getattr(r, f) for f in fields] for r in runs]
        rows = [
            list(Message.objects.filter(run=r).order_by("index").values_list("parts", "counts"))
            for r in runs
        ]
        skeletons = [{s.estimator: s.data for s in r.skeletons.all()} for r in runs]
        return facts, rows, skeletons

    assert stored(small) == stored(big)


def _stored(job):
    runs = list(job.upload.runs.order_by("pk"))
    fields = ("title", "session_id", "subagent", "message_count", "request_count", "compactions")
    facts = [[getattr(r, f) for f in fields] for r in runs]
    rows = [
        list(Message.objects.filter(run=r).order_by("index").values_list("parts", "counts"))
        for r in runs
    ]
    return facts, rows


def test_a_claude_code_session_read_in_pieces_is_stored_as_one_read_whole(
    alice, bob, corpus, monkeypatch
):
    from contextsim.systems.claude_code import format as claude_code

    body = (corpus / "claude_code" / "codemie_session-624a4a58.jsonl").read_bytes()
    whole = imports.run_import(imports.store_upload(alice, "s.jsonl", BytesIO(body)).pk)
    monkeypatch.setattr(claude_code, "FLUSH_LINES", 2)
    monkeypatch.setattr(claude_code, "KEEP", 1)
    pieces = imports.run_import(imports.store_upload(bob, "s.jsonl", BytesIO(body)).pk)
    assert whole.status == pieces.status == ImportJob.Status.DONE
    assert _stored(whole) == _stored(pieces)


def test_an_import_restarted_by_a_late_line_keeps_only_the_second_reading(alice, monkeypatch):
    from contextsim.systems.claude_code import format as claude_code

    monkeypatch.setattr(claude_code, "FLUSH_LINES", 1)
    monkeypatch.setattr(claude_code, "KEEP", 1)
    body = LATE_LINE_SESSION
    job = imports.run_import(imports.store_upload(alice, "s.jsonl", BytesIO(body)).pk)
    assert job.status == ImportJob.Status.DONE
    (run,) = Run.all_objects.all()
    assert run.ready and run.message_count == 4
    texts = [p["text"] for p in Message.objects.get(run=run, index=1).parts]
    assert texts == ["one", "two"]


def test_bad_input_found_after_the_first_pieces_were_written_leaves_nothing(alice, monkeypatch):
    from contextsim.ingest import base as formats_base
    from contextsim.systems.native import format as native

    monkeypatch.setattr(formats_base, "LAZY_BYTES", 0)
    monkeypatch.setattr(native, "PIECE", 1)
    doc = json.loads(json.dumps(NATIVE))
    doc["runs"][1]["messages"].append({"role": "bogus", "content": "x"})
    job = imports.run_import(_upload(alice, doc).pk)
    assert job.status == ImportJob.Status.FAILED and "$.runs[1].messages[1]" in job.error
    assert Run.all_objects.count() == 0 and Message.objects.count() == 0


def test_counts_that_fail_after_the_runs_were_shown_leave_them_browsable(
    alice, alice_client, monkeypatch
):
    def broken(run, counted=None):
        raise RuntimeError("tokenizer crashed")

    monkeypatch.setattr(derivation, "do_count_rest", broken)
    job = imports.run_import(_upload(alice, MIXED).pk)
    assert job.status == ImportJob.Status.DONE
    assert "counts are made later, in the background" in job.warnings[-1]
    run = job.upload.runs.get()
    assert run.counting == []
    page = alice_client.get(reverse("run", args=[run.public_id])).content.decode()
    assert "· o200k tokens ·" in page  # built on first use
    # The estimates per request count what the import could not when first shown.
    requests = alice_client.get(reverse("run-requests", args=[run.public_id])).content.decode()
    assert "tiktoken o200k_base" in requests and "characters / 4" in requests
    tokens = [count_message(m, ESTIMATORS["o200k"]) for m in stored_run(run).messages]
    rows = request_rows(run)
    assert [r.estimates["o200k"] for r in rows] == [sum(tokens[: r.history]) for r in rows]


def test_a_run_is_shown_counted_by_its_first_estimator_and_by_every_other_after(
    alice, alice_client, monkeypatch
):
    seen: dict[str, object] = {}

    def look(run):
        seen["counts"] = list(Message.objects.filter(run=run).values_list("counts", flat=True))
        # A fast estimator not counted yet is counted when its dashboard is asked for.
        seen["rows"] = request_rows(run)
        url = reverse("run", args=[run.public_id])
        seen["page"] = alice_client.get(url, {"estimator": "script"}).status_code

    run = _imported_looking_first(alice, MIXED, monkeypatch, look).upload.runs.get()
    assert all(set(counts) == {SHOWN_FIRST} for counts in seen["counts"])
    messages = stored_run(run).messages
    rows = seen["rows"]
    assert isinstance(rows, list) and seen["page"] == 200
    for row in rows:
        # The others are left out of the estimates per request until counted.
        assert set(row.estimates) == {SHOWN_FIRST}
        sent = messages[: row.history]
        assert row.estimates[SHOWN_FIRST] == sum(
            count_message(m, ESTIMATORS[SHOWN_FIRST]) for m in sent
        )
    stored = Message.objects.filter(run=run).order_by("index").values_list("counts", flat=True)
    for message, counts in zip(messages, stored, strict=True):
        assert counts == {n: count_message(message, e) for n, e in ESTIMATORS.items()}


def test_a_view_of_a_run_still_counting_stores_nothing_and_shows_every_estimator(alice):
    run = imports.run_import(_upload(alice, MIXED).pk).upload.runs.get()
    rows = Message.objects.filter(run=run).order_by("index")
    full = list(rows.values_list("pk", "counts"))
    for pk, counts in full:  # as if chars4 were still to count
        Message.objects.filter(pk=pk).update(
            counts={n: c for n, c in counts.items() if n != "chars4"}
        )
    RunSkeleton.objects.filter(run=run, estimator="chars4").delete()
    CACHE.clear()
    run.refresh_from_db()
    sk = skeleton_of(run, "chars4")  # built in memory from the messages
    assert sk.tokens == tuple(c["chars4"] for _, c in full)
    assert not RunSkeleton.objects.filter(run=run, estimator="chars4").exists()
    assert all("chars4" not in c for c in rows.values_list("counts", flat=True))
    derivation.do_derive(run)  # the job stores both
    assert [c["chars4"] for c in rows.values_list("counts", flat=True)] == list(sk.tokens)
    stored = RunSkeleton.objects.get(run=run, estimator="chars4")
    assert stored.revision == run.revision and from_dict(stored.data).tokens == sk.tokens
