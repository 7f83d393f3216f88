"""Stretches of a run's fit and the weights of its residuals (contextsim.truth.reconcile).

A log leaves some context out of every request, and not always the same amount: a
harness re-injects its context when it compacts, and a resumed session, /clear or
context injected without a record moves the measured context with nothing logged. The
fit gives each stretch its own overhead; `unlogged_breaks` finds the stretches nothing
logged began. Residuals are weighted by 1/size: errors are relative.

Units: tokens; rows are (estimated, measured, (stretch, step)) in step order.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

Row = tuple[int, int, tuple[int, int]]

SHIFT_SHARE = 0.08
SHIFT_TOKENS = 1_000
SHIFT_WINDOW = 3
"""An unlogged stretch begins at a request whose residual (measured - scale x
estimated) moved from the request before's by more than SHIFT_SHARE of its measured size
and more than SHIFT_TOKENS, where the median residual of it and the SHIFT_WINDOW - 1
after it differs from that of the SHIFT_WINDOW before by as much, the same way: a step
that stays, not a drift or one odd request."""


def weights(measured: Sequence[int]) -> list[float]:
    """1/size, so each request's error counts as a share of it; sizes under a quarter
    of the median count as a quarter of it (a tiny request is not worth a hundred)."""
    floor = max(statistics.median(measured) / 4, 1)
    return [1 / max(m, floor) for m in measured]


def weighted_median(values: Sequence[float], shares: Sequence[float]) -> float:
    """The value where the shares, values in order, first reach half their total."""
    ordered = sorted(zip(values, shares, strict=True))
    half, seen = sum(shares) / 2, 0.0
    for value, weight in ordered:
        seen += weight
        if seen >= half:
            return value
    return ordered[-1][0]


def unlogged_breaks(rows: list[Row], scale: float) -> tuple[list[Row], set[int]]:
    """`rows` with a stretch of its own wherever the residuals jump or fall and stay
    there (see SHIFT_SHARE), and the new stretches' ids. Stretch ids stay in step
    order: a logged stretch k's unlogged parts are numbered after it."""
    w = SHIFT_WINDOW
    out: list[Row] = []
    unlogged: set[int] = set()
    ids: dict[tuple[int, int], int] = {}
    start = 0
    while start < len(rows):
        stretch = rows[start][2][0]
        stop = start
        while stop < len(rows) and rows[stop][2][0] == stretch:
            stop += 1
        part = rows[start:stop]
        residual = [m - scale * e for e, m, _ in part]
        cuts: list[int] = []
        for i in range(w, len(part) - w + 1):
            # A step, not a drift: the residual moves at once, and stays moved.
            moved = residual[i] - residual[i - 1]
            enough = max(SHIFT_TOKENS, SHIFT_SHARE * part[i][1])
            if abs(moved) <= enough or (cuts and i - cuts[-1] < w):
                continue
            before = statistics.median(residual[i - w : i])
            after = statistics.median(residual[i : i + w])
            if abs(after - before) > enough and (after - before) * moved > 0:
                cuts.append(i)
        piece = 0
        for j, (e, m, (_, step)) in enumerate(part):
            if piece < len(cuts) and j == cuts[piece]:
                piece += 1
            key = (stretch, piece)
            if key not in ids:
                ids[key] = len(ids)
                if piece:
                    unlogged.add(ids[key])
            out.append((e, m, (ids[key], step)))
        start = stop
    return out, unlogged
