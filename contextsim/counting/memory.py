"""Per-skeleton memory of work that does not depend on the budget.

A dashboard re-simulates the same run for every slider move; the prefix sums and safe
cut points a policy prepares depend only on the run and a few parameters, so they are
kept on the skeleton itself (Skeleton.memory) for as long as it lives, and go with it.
No state is kept here: whoever holds a skeleton holds what was worked out for it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Skeleton(Protocol):
    """What keeps a memory: a contextsim.counting.skeleton.Skeleton."""

    @property
    def memory(self) -> dict[Hashable, Any]: ...


_GREW_FROM = ("memory", "grew from")
"""The key under which a skeleton keeps a weak reference to the one it grew from."""


def per_skeleton(skeleton: Skeleton, key: Hashable, build: Callable[[], T]) -> T:
    """`build()` once per (skeleton, key); two threads asking at once may both build
    (the same value): the later one is kept."""
    memory = skeleton.memory
    if key in memory:
        found: T = memory[key]
        return found
    value = build()
    memory[key] = value
    return value


def kept(skeleton: Skeleton, key: Hashable) -> Any:
    """What is kept under `key` for the skeleton, or None."""
    return skeleton.memory.get(key)


def remember(skeleton: Skeleton, key: Hashable, value: Any) -> None:
    """Keep `value` under `key` for the skeleton, in place of what was kept there."""
    skeleton.memory[key] = value


def grown(new: Skeleton, old: Skeleton) -> None:
    """Record that skeleton `new` is `old` with messages added at the end (its last
    request perhaps completed): what is kept for `old` may be extended for `new`
    (`earlier`) instead of being made again. `old` is not kept alive by it."""
    new.memory[_GREW_FROM] = weakref.ref(old)


def earlier(skeleton: Skeleton, key: Hashable) -> Any:
    """What is kept under `key` for the skeleton `skeleton` grew from (see `grown`), or
    None. The caller checks that it still applies: growing may change a run's last
    request, and facts beside the messages (a compaction) may come with it."""
    link = skeleton.memory.get(_GREW_FROM)
    old = link() if link is not None else None
    return None if old is None else old.memory.get(key)
