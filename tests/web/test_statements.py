"""Written-out statements (webapp.runtime.statements) read and write what the ORM does: every
value read is the one the ORM gives (texts, aware datetimes, booleans, JSON, large
whole numbers, nulls), an update writes only the fields named, a delete only the rows
named, and a lock is taken where the database has row locks."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp.models import Run, RunSkeleton
from webapp.runtime import statements

TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=40)
WHEN = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
FIELDS = (
    "id",
    "public_id",
    "title",
    "model",
    "created",
    "last_append",
    "ready",
    "message_count",
    "peak_measured_context",
    "compactions",
    "owner",
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    title=TEXT,
    model=TEXT,
    created=WHEN,
    last_append=st.none() | WHEN,
    ready=st.booleans(),
    count=st.integers(0, 2**31 - 1),
    peak=st.none() | st.integers(0, 2**63 - 1),
    compactions=st.lists(st.integers(0, 10**6), max_size=4),
)
def test_a_row_read_by_a_statement_equals_the_orms(
    alice, title, model, created, last_append, ready, count, peak, compactions
):
    run = Run.all_objects.create(
        owner=alice,
        title=title,
        model=model,
        format="native",
        last_append=last_append,
        ready=ready,
        message_count=count,
        peak_measured_context=peak,
        compactions=compactions,
    )
    Run.all_objects.filter(pk=run.pk).update(created=created)
    read = statements.read(Run, FIELDS, {"id": run.pk})
    orm = Run.all_objects.only(*FIELDS).get(pk=run.pk)
    assert read is not None
    for name in FIELDS:
        attname = Run._meta.get_field(name).attname
        assert getattr(read, attname) == getattr(orm, attname), name
        assert type(getattr(read, attname)) is type(getattr(orm, attname)), name
    assert read.created.tzinfo is not None
    assert read.get_deferred_fields() == orm.get_deferred_fields()
    assert read.format == "native"  # a deferred field is read when first used


def test_a_statement_finds_nothing_or_only_the_row_named(alice, bob):
    mine = Run.objects.create(owner=alice, title="mine", format="native")
    Run.objects.create(owner=bob, title="theirs", format="native")
    found = statements.read(Run, ("id",), {"public_id": mine.public_id, "owner": alice.pk})
    assert found is not None and found.pk == mine.pk
    assert statements.read(Run, ("id",), {"public_id": mine.public_id, "owner": bob.pk}) is None
    hidden = {"public_id": mine.public_id, "ready": False}
    assert statements.read(Run, ("id",), hidden) is None


def test_an_update_writes_only_the_fields_named(alice):
    run = Run.objects.create(owner=alice, title="before", format="native", revision=4)
    other = Run.objects.create(owner=alice, title="other", format="native", revision=4)
    loaded = statements.read(Run, ("id", "revision", "last_append"), {"id": run.pk})
    assert loaded is not None
    loaded.revision, loaded.last_append = 5, datetime(2026, 12, 3, 9, 30, tzinfo=UTC)
    loaded.title = "never written"
    statements.update_rows([loaded], ["revision", "last_append"])
    run.refresh_from_db()
    other.refresh_from_db()
    assert run.revision == 5 and run.last_append == loaded.last_append
    assert run.title == "before" and other.revision == 4 and other.last_append is None


def test_a_delete_removes_only_the_rows_named(alice):
    runs = [Run.objects.create(owner=alice, title=f"r{i}", format="native") for i in range(2)]
    for run in runs:
        RunSkeleton.objects.create(run=run, estimator="chars4", data={}, revision=0)
    statements.delete(RunSkeleton, "run", runs[0].pk)
    assert list(RunSkeleton.objects.values_list("run_id", flat=True)) == [runs[1].pk]


@pytest.mark.skipif(not connection.features.has_select_for_update, reason="no row locks")
@pytest.mark.django_db(transaction=True)
def test_a_locking_read_waits_for_the_row_lock(alice):
    run = Run.objects.create(owner=alice, title="locked", format="native")
    held, order = threading.Event(), []

    def other_writer() -> None:
        with transaction.atomic():
            Run.objects.select_for_update().get(pk=run.pk)
            held.set()
            time.sleep(0.3)
            order.append("released")
        connection.close()

    thread = threading.Thread(target=other_writer)
    thread.start()
    held.wait(5)
    started = time.monotonic()
    with transaction.atomic():
        statements.read(Run, ("id",), {"id": run.pk}, lock=True)
        order.append("read")
    thread.join()
    assert order == ["released", "read"]
    assert time.monotonic() - started >= timedelta(milliseconds=200).total_seconds()
