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

    def evict(_: weakref.ref[Any]) -> None:
        _MEMO.pop(slot, None)

    _MEMO[slot] = (weakref.ref(skeleton, evict), value)
    return value
