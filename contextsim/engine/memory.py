"""Per-skeleton memory of work that does not depend on the budget.

A dashboard re-simulates the same run for every slider move; the prefix sums and safe
cut points a policy prepares depend only on the run and a few parameters, so they are
kept here for as long as the skeleton itself lives (a weak reference evicts them).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

_MEMO: dict[tuple[int, Hashable], tuple[weakref.ref[Any], Any]] = {}


def per_skeleton(skeleton: Any, key: Hashable, build: Callable[[], T]) -> T:
    """`build()` once per (skeleton, key) while the skeleton is alive."""
    slot = (id(skeleton), key)
    found = _MEMO.get(slot)
    if found is not None and found[0]() is skeleton:
        value: T = found[1]
        return value
    value = build()
    remember(skeleton, key, value)
    return value


def kept(skeleton: Any, key: Hashable) -> Any:
    """What is kept under (skeleton, key), or None."""
    found = _MEMO.get((id(skeleton), key))
    return found[1] if found is not None and found[0]() is skeleton else None


def remember(skeleton: Any, key: Hashable, value: Any) -> None:
    """Keep `value` under (skeleton, key) while the skeleton is alive, in place of what
    was kept there."""
    slot = (id(skeleton), key)

    def evict(_: weakref.ref[Any]) -> None:
        _MEMO.pop(slot, None)

    _MEMO[slot] = (weakref.ref(skeleton, evict), value)


_GROWN: dict[int, tuple[weakref.ref[Any], weakref.ref[Any]]] = {}


def grown(new: Any, old: Any) -> None:
    """Record that skeleton `new` is `old` with messages added at the end (its last
    request perhaps completed): what is kept for `old` may be extended for `new`
    (`earlier`) instead of being made again. Forgotten when either is let go."""
    slot = id(new)

    def forget(_: weakref.ref[Any]) -> None:
        _GROWN.pop(slot, None)

    _GROWN[slot] = (weakref.ref(new, forget), weakref.ref(old))


def earlier(skeleton: Any, key: Hashable) -> Any:
    """What is kept under `key` for the skeleton `skeleton` grew from (see `grown`), or
    None. The caller checks that it still applies: growing may change a run's last
    request, and facts beside the messages (a compaction) may come with it."""
    link = _GROWN.get(id(skeleton))
    if link is None or link[0]() is not skeleton:
        return None
    old = link[1]()
    if old is None:
        return None
    found = _MEMO.get((id(old), key))
    return found[1] if found is not None and found[0]() is old else None
