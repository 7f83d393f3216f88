"""What is derived from a run is stored by jobs only (webapp.store.actions.derivation):
an idle live run's skeletons and counts, a skeleton of an older layout, a report a
view computed; never for a revision the run has left."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from contextsim import model as core
from contextsim.counting.estimators import ESTIMATORS
from webapp.models import EstimatorReport, Message, Run, RunSkeleton
from webapp.store.actions import derivation
from webapp.store.actions.appends import do_append_messages, do_create_live_run


def _live(owner) -> Run:
    run = do_create_live_run(
        owner, core.Run("live", (core.Message("user", (core.TextPart("go"),)),))
    )
    return do_append_messages(
        run, [core.Message("assistant", (core.TextPart("Привет мир " * 30),))]
    )


def _idle(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(last_append=timezone.now() - derivation.IDLE * 2)


@pytest.mark.django_db
def test_a_growing_run_waits_and_an_idle_one_is_derived_once(alice):
    run = _live(alice)
    assert run not in derivation.pending()  # appended just now: still growing
    _idle(run)
    assert run in derivation.pending()
    assert derivation.do_derive_pending() >= 1
    stored = RunSkeleton.objects.filter(run=run, revision=run.revision)
    assert sorted(stored.values_list("estimator", flat=True)) == sorted(ESTIMATORS)
    for counts in Message.objects.filter(run=run).values_list("counts", flat=True):
        assert set(counts) == set(ESTIMATORS)
    assert run not in derivation.pending()
    run = do_append_messages(run, [core.Message("user", (core.TextPart("more"),))])
    _idle(run)
    assert run in derivation.pending()  # its new revision has no skeleton yet


@pytest.mark.django_db
def test_a_run_that_changes_while_it_is_derived_keeps_nothing_of_the_old_revision(
    alice, monkeypatch
):
    run = _live(alice)
    real = derivation.run_facts

    def grow_meanwhile(stored):
        do_append_messages(
            Run.objects.get(pk=run.pk), [core.Message("user", (core.TextPart("x"),))]
        )
        return real(stored)

    monkeypatch.setattr(derivation, "run_facts", grow_meanwhile)
    derivation.do_derive(run)
    run.refresh_from_db()
    assert not RunSkeleton.objects.filter(run=run, revision=run.revision).exists()


@pytest.mark.django_db
def test_a_report_is_stored_for_the_revision_it_was_computed_from(alice, monkeypatch):
    run = _live(alice)
    derivation.do_store_report(run, "o200k")
    (report,) = EstimatorReport.objects.filter(run=run)
    assert report.revision == run.revision and report.data["total"]["chars"] > 0
    real = derivation.report_of

    def grow_meanwhile(stored, reference):
        do_append_messages(
            Run.objects.get(pk=run.pk), [core.Message("user", (core.TextPart("y"),))]
        )
        return real(stored, reference)

    monkeypatch.setattr(derivation, "report_of", grow_meanwhile)
    before = Run.objects.get(pk=run.pk)
    derivation.do_store_report(before, "cl100k")
    assert not EstimatorReport.objects.filter(run=run, reference="cl100k").exists()


@pytest.mark.django_db
def test_only_a_few_runs_are_derived_per_tick(alice):
    runs = [_live(alice) for _ in range(3)]
    for run in runs:
        _idle(run)
    assert derivation.do_derive_pending(limit=2) == 2
    assert len([r for r in runs if r in derivation.pending()]) == 1
    assert timedelta(seconds=1) < derivation.IDLE


def test_a_tick_goes_on_deriving_batches_until_its_time_is_spent(alice):
    from webapp.store.actions.appends import do_create_live_runs

    runs = [
        core.Run(f"r{n}", (core.Message("user", (core.TextPart(f"x {n}"),)),)) for n in range(5)
    ]
    do_create_live_runs(alice, runs)
    Run.objects.update(last_append=None)
    assert len(derivation.pending(limit=100)) == 5
    # One batch of 2 without a time; batches until none is left with one.
    assert derivation.do_derive_pending(limit=2) == 2
    assert derivation.do_derive_pending(limit=2, seconds=60) == 3
    assert derivation.pending(limit=100) == []
