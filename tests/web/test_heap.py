import gc
import io

import pytest

from webapp.runtime import heap


def test_settle_freezes_the_start_up_heap_and_keeps_the_collector_thresholds():
    before = gc.get_threshold()
    gc.unfreeze()
    try:
        heap.settle()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == before
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


@pytest.mark.django_db
def test_import_run_collects_seldom(tmp_path):
    from django.core.management import call_command

    log = tmp_path / "run.jsonl"
    log.write_text('{"role": "user", "content": "hi"}\n')
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's defaults, whatever an earlier test set
    try:
        call_command("import_run", str(log), stdout=io.StringIO())
        assert gc.get_threshold() == heap.THRESHOLDS
    finally:
        gc.set_threshold(*before)


def test_a_worker_settles_its_heap_when_it_starts():
    from celery.signals import worker_init

    from webapp import tasks

    (settling,) = [r for _, r in worker_init.receivers if r() is tasks._settle_heap]
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    gc.unfreeze()  # what an earlier test's settling froze
    try:
        settling()()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == heap.THRESHOLDS
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
