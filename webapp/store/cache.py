"""The run store's one cache, shared by the threads of a process, behind one lock.

It keeps what is costly to make again and can always be made again from the stored
rows: skeletons by (run, estimator, revision), the skeleton builders of the live runs
this process follows (so the next revision is fed the new messages only), and estimator
reports computed for a view. The lock guards only the cache's own structures: nothing
is read, built or counted while it is held, and a builder being fed is taken out of the
cache meanwhile (another view of the same run builds its own).

Keys use a run's public id, never reused, unlike a primary key after a deletion.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from contextsim.counting.builder import SkeletonBuilder
from contextsim.counting.skeleton import Skeleton

SKELETONS = 64
"""Skeletons kept, most recently used last."""
BUILDERS = 8
"""Builders of followed live runs kept (a builder holds per-message lists: an imported
run of 200,000 messages is not kept for appends that will not come)."""
REPORTS = 16
"""Estimator reports kept."""

SkeletonKey = tuple[str, str, int]
"""(run public id, estimator, revision)."""


class StoreCache:
    """Skeletons, builders and reports (see the module docstring); every method takes
    the lock for its own few dictionary operations only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._skeletons: OrderedDict[SkeletonKey, Skeleton] = OrderedDict()
        self._builders: OrderedDict[tuple[str, str], tuple[int, str, SkeletonBuilder]] = (
            OrderedDict()
        )
        self._reports: OrderedDict[tuple[str, str, int], dict[str, Any]] = OrderedDict()

    def skeleton(self, key: SkeletonKey) -> Skeleton | None:
        with self._lock:
            found = self._skeletons.get(key)
            if found is not None:
                self._skeletons.move_to_end(key)
            return found

    def keep_skeleton(self, key: SkeletonKey, skeleton: Skeleton) -> None:
        """Keep `skeleton`, and of the run's older revisions under the estimator only the
        newest (a live run's next skeleton grows from it, contextsim.counting.memory;
        kept, a followed run's last 64 revisions held hundreds of megabytes at 20,000
        messages and the garbage collector walked them)."""
        public_id, estimator, revision = key
        with self._lock:
            self._skeletons[key] = skeleton
            older = sorted(
                k
                for k in self._skeletons
                if k[0] == public_id and k[1] == estimator and k[2] < revision
            )
            for stale in older[:-1]:
                del self._skeletons[stale]
            while len(self._skeletons) > SKELETONS:
                self._skeletons.popitem(last=False)

    def take_builder(
        self, public_id: str, estimator: str
    ) -> tuple[int, str, SkeletonBuilder] | None:
        """The kept builder of a live run (revision fed up to, counter, builder), taken
        out of the cache: its taker feeds it and gives it back (`keep_builder`)."""
        with self._lock:
            return self._builders.pop((public_id, estimator), None)

    def keep_builder(
        self, public_id: str, estimator: str, revision: int, counter: str, builder: SkeletonBuilder
    ) -> None:
        with self._lock:
            self._builders[(public_id, estimator)] = (revision, counter, builder)
            self._builders.move_to_end((public_id, estimator))
            while len(self._builders) > BUILDERS:
                self._builders.popitem(last=False)

    def report(self, key: tuple[str, str, int]) -> dict[str, Any] | None:
        with self._lock:
            return self._reports.get(key)

    def keep_report(self, key: tuple[str, str, int], data: dict[str, Any]) -> None:
        with self._lock:
            self._reports[key] = data
            while len(self._reports) > REPORTS:
                self._reports.popitem(last=False)

    def revisions(self, public_id: str, estimator: str) -> list[int]:
        """The revisions of the run's skeletons under `estimator` kept now (tests)."""
        with self._lock:
            return sorted(k[2] for k in self._skeletons if k[:2] == (public_id, estimator))

    def clear(self) -> None:
        """Forget everything (a process that did not follow any run; tests)."""
        with self._lock:
            self._skeletons.clear()
            self._builders.clear()
            self._reports.clear()


CACHE = StoreCache()
"""The process's cache (the store owns it; nothing outside webapp.store uses it)."""
