import gc

from webapp import heap


def test_settle_freezes_the_start_up_heap_and_raises_the_collector_thresholds():
    before = gc.get_threshold()
    try:
        heap.settle()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == heap.THRESHOLDS
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
