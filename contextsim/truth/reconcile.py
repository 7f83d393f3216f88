"""Reconciliation: from what the harness counts to what the provider will count.

A log leaves out what the agent sends on every request without writing it down (the
system prompt, the tool definitions, injected context), and the provider counts with
its own tokenizer. So a request's *estimated* size (the estimator's count of the logged
messages) is mapped to a *reconciled* size, the provider's count:

    reconciled = scale x estimated + overhead

`overhead` is the unlogged part, which no policy removes: text the log leaves out, so
never below 0; `scale` the provider tokenizer's ratio to the estimator's. Both are
fitted per run on the requests whose measured usage is known, as the log replayed them
(`as_logged`), robustly: the slope is the median of the pairwise slopes (Theil-Sen) and
the overhead the median residual weighted by 1/size (errors are relative: a small early
request counts as much as a large late one), so one odd request cannot move the fit; a
run of `MIN_FOR_SCALE - 1` measured requests or fewer fits the overhead alone (scale 1).
Where the median residual is below 0 the overhead is 0 and the scale is fitted again.

The fit follows stretches: each logged compaction starts one (the harness re-injects
its context), and so does a lasting jump or fall of the measured context that nothing
logged explains (a resumed session, /clear, context injected unlogged): SHIFT_WINDOW
requests on each side whose residuals differ by more than SHIFT_SHARE of the request
and SHIFT_TOKENS. Each stretch has its own overhead.

Units: tokens per request; errors are shares of the measured size.
"""

from __future__ import annotations

import statistics
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, replace
from operator import itemgetter, sub, truediv

from contextsim.truth.stretches import Row, unlogged_breaks, weighted_median, weights

MIN_FOR_SCALE = 4
"""Measured requests needed to fit a scale; with fewer, only the overhead is fitted."""
MAX_POINTS = 300
"""Points the pairwise slopes are taken over (evenly spread), so a fit stays quadratic
in at most this many requests, whatever the run's length."""
SCALE_DIGITS = 4
"""Decimals the fitted scale is kept to (as it is reported): one more request of a
growing run rarely moves it, so the sizes worked out for its earlier requests hold
(contextsim.engine.simulate extends a live run's replay instead of redoing it)."""
SCALE_RANGE = (0.5, 3.0)
"""Scales outside this range are not a tokenizer ratio: they are clamped to it."""


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """`reconciled = scale x estimated + overhead` (tokens), and how well it fits.

    `fitted_on` counts the measured requests fitted (0 for one set by hand);
    `median_error` and `worst_error` are |reconciled - measured| / measured over them."""

    scale: float
    overhead: int
    fitted_on: int = 0
    median_error: float | None = None
    worst_error: float | None = None
    source: str = "fitted"
    """"fitted" on this run, "set" by the person, or where it was borrowed from."""
    later: tuple[tuple[int, int], ...] = ()
    """(first step, overhead) of each stretch after a logged compaction that has an
    overhead of its own: a harness re-injects its context when it compacts, and not
    always the same amount. Only what the log replays (as_logged) has those stretches;
    a what-if uses `overhead` throughout, but for the unlogged ones."""
    unlogged: tuple[int, ...] = ()
    """The first steps, among `later`, of stretches nothing logged began (a jump or a
    fall of the measured context): what they add or take is sent whatever the policy,
    so a what-if follows them too, up to the log's first compaction."""

    def __post_init__(self) -> None:
        if not 0 < self.scale <= 100:
            raise ValueError(f"scale: expected a ratio above 0 and at most 100, got {self.scale}")
        if abs(self.overhead) > 100_000_000:
            raise ValueError(f"overhead: expected at most 100,000,000 tokens, got {self.overhead}")

    def tokens(self, estimated: int) -> int:
        """The reconciled size of a request the estimator counts `estimated` tokens:
        never 0 for a request that sends something."""
        return sized(self.scale, estimated, self.overhead)

    def at(self, step: int) -> Reconciliation:
        """The reconciliation of the log's own request `step` (its stretch's overhead)."""
        found = self.overhead
        for first, overhead in self.later:
            if step >= first:
                found = overhead
        return self if found == self.overhead else replace(self, overhead=found, later=())

    def to_dict(self) -> dict[str, object]:
        return {
            "scale": round(self.scale, 4),
            "overhead": self.overhead,
            "fitted_on": self.fitted_on,
            "median_error": None if self.median_error is None else round(self.median_error, 4),
            "worst_error": None if self.worst_error is None else round(self.worst_error, 4),
            "source": self.source,
            "later": [list(pair) for pair in self.later],
            "unlogged": list(self.unlogged),
        }


def sized(scale: float, estimated: int, overhead: int) -> int:
    """round(scale x estimated) + overhead, at least 1 when `estimated` is above 0 (a
    request that sends something is never 0 tokens), else at least 0."""
    return max(round(scale * estimated) + overhead, 1 if estimated > 0 else 0)


def fit(
    estimated: Sequence[int],
    measured: Sequence[int],
    stretches: Sequence[tuple[int, int]] = (),
) -> Reconciliation | None:
    """The reconciliation of requests whose estimator counts are `estimated` and whose
    measured sizes are `measured` (pairs in the same order; requests measured as 0 are
    left out). None when nothing was measured.

    `stretches` gives, per request, (stretch, step): the stretch is how many logged
    compactions came before it. One scale is fitted on the pairs within each stretch;
    each stretch after the first with measured requests gets its own overhead."""
    marks = list(stretches) or [(0, i) for i in range(len(estimated))]
    return fit_rows(
        [(e, m, mark) for e, m, mark in zip(estimated, measured, marks, strict=True) if m > 0]
    )


def fit_rows(
    rows: Sequence[tuple[int, int, tuple[int, int]]],
    scale: float | None = None,
    specs: int = 0,
) -> Reconciliation | None:
    """As `fit`, from (estimated, measured, (stretch, step)) rows of requests, in step
    order (those measured as 0 are left out). The scale is kept to
    SCALE_DIGITS decimals; given as `scale`, only the overheads are fitted. `specs`:
    the estimator's tokens of the tool definitions the log holds, which a provider
    counts in a form of its own, often shorter: the overhead may go that far below 0
    (scaled), and no further."""
    rows = [row for row in rows if row[1] > 0]
    if not rows:
        return None
    # Columns mapped in C: a live run's fit is made again whenever a measured request
    # arrives, over all of them.
    pairs = list(zip(map(itemgetter(0), rows), map(itemgetter(1), rows), strict=True))
    fitted = scale is None
    if scale is None:
        scale = round(_slope(_groups(rows)), SCALE_DIGITS) if _spread_out(pairs) else 1.0
    rows, unlogged = unlogged_breaks(rows, scale)
    if fitted and unlogged and _spread_out(pairs):
        # Slopes across a jump are not a tokenizer's ratio: within stretches only.
        scale = round(_slope(_groups(rows)), SCALE_DIGITS)
    overheads = _overheads_of(rows, scale)
    least = -scale * specs
    if fitted and min(overheads.values()) < least:  # the unlogged part is never negative
        floor = {k: max(v, least) for k, v in overheads.items()}
        scale = round(_ratio(rows, floor), SCALE_DIGITS)
        overheads = _overheads_of(rows, scale)
        least = -scale * specs
    rounded = {k: round(max(v, least)) for k, v in overheads.items()}
    first_step: dict[int, int] = {}
    for _, _, (stretch, step) in rows:
        first_step.setdefault(stretch, step)
    first = min(rounded)
    later = tuple((first_step[k], rounded[k]) for k in sorted(rounded) if k != first)
    marks = tuple(first_step[k] for k in sorted(unlogged))
    rec = Reconciliation(scale, rounded[first], later=later, unlogged=marks)
    return _scored(rec, [(e, m, step) for e, m, (_, step) in rows])


def _groups(rows: Sequence[Row]) -> list[list[tuple[int, int]]]:
    """The (estimated, measured) pairs of each stretch, in order of stretch."""
    groups: dict[int, list[tuple[int, int]]] = {}
    for e, m, (stretch, _) in rows:
        groups.setdefault(stretch, []).append((e, m))
    return [groups[k] for k in sorted(groups)]


def _overheads_of(rows: Sequence[Row], scale: float) -> dict[int, float]:
    """Per stretch, the weighted median residual (see _weights)."""
    groups: dict[int, list[tuple[int, int]]] = {}
    for e, m, (stretch, _) in rows:
        groups.setdefault(stretch, []).append((e, m))
    return {k: _median_residual(g, scale) for k, g in groups.items()}


def _median_residual(pairs: list[tuple[int, int]], scale: float) -> float:
    """The weighted median of `measured - scale x estimated` over (estimated,
    measured) pairs."""
    measured = [m for _, m in pairs]
    residuals = [m - scale * e for e, m in pairs]
    return weighted_median(residuals, weights(measured))


def _ratio(rows: Sequence[Row], overheads: dict[int, float]) -> float:
    """The weighted median of (measured - overhead) / estimated, clamped to SCALE_RANGE:
    the scale when the overheads are held where they are."""
    usable = [(e, m, k) for e, m, (k, _) in rows if e > 0]
    if not usable:
        return 1.0
    ratios = [(m - overheads[k]) / e for e, m, k in usable]
    low, high = SCALE_RANGE
    found = weighted_median(ratios, weights([m for _, m, _ in usable]))
    return min(max(found, low), high)


def fit_exact(rows: Sequence[tuple[int, int, tuple[int, int]]]) -> Reconciliation | None:
    """The reconciliation of requests recorded whole (a capture proxy saw every token
    sent): nothing is unlogged, so the overhead is 0 and the scale is the median ratio
    of measured to estimated, clamped to SCALE_RANGE. Rows as in `fit_rows`; None when
    nothing was measured."""
    rows = [row for row in rows if row[1] > 0 and row[0] > 0]
    if not rows:
        return None
    low, high = SCALE_RANGE
    ratio = statistics.median(m / e for e, m, _ in rows)
    rec = Reconciliation(round(min(max(ratio, low), high), SCALE_DIGITS), 0, source="exact")
    return _scored(rec, [(e, m, step) for e, m, (_, step) in rows])


def tells_scale(rows: Sequence[tuple[int, int, tuple[int, int]]]) -> bool:
    """Whether these measured requests can tell a scale from an overhead (see
    `_spread_out`); when they cannot, `fit_rows` takes scale 1 unless given another."""
    return _spread_out([(e, m) for e, m, _ in rows if m > 0])


def _spread_out(pairs: list[tuple[int, int]]) -> bool:
    """Whether the estimates vary enough to tell a scale from an overhead: at least
    MIN_FOR_SCALE requests, and their middle 80% spanning 10% of the median or more (a
    run whose requests are all about one size fits the overhead alone). Under 10
    requests nothing is trimmed: one small first request against a cluster of later
    ones is what tells the scale of a short run."""
    if len(pairs) < MIN_FOR_SCALE:
        return False
    ordered = sorted(e for e, _ in pairs)
    trim = len(ordered) // 10
    low, high = ordered[trim], ordered[-1 - trim]
    return high - low >= 0.1 * max(statistics.median(ordered), 1)


def _slope(groups: list[list[tuple[int, int]]]) -> float:
    """Theil-Sen: the median of the slopes between every two requests of one stretch
    whose estimates differ (by more than 1% of the larger), clamped to SCALE_RANGE; 1
    when none do."""
    total = sum(len(g) for g in groups)
    slopes: list[float] = []
    for group in groups:
        slopes += _pair_slopes(_spread(group, max(2, MAX_POINTS * len(group) // total)))
    if not slopes:
        return 1.0
    low, high = SCALE_RANGE
    return min(max(statistics.median(slopes), low), high)


def _pair_slopes(points: list[tuple[int, int]]) -> list[float]:
    """The slope between every two points whose estimates differ by more than 1% of the
    larger. In order of estimate, the points far enough above a point are all those
    from the first one that is (the gap only widens), so no pair is tested; a pair's
    slope is the same whichever point comes first."""
    ordered = sorted(points)
    slopes: list[float] = []
    start = 0
    for e1, m1 in ordered:
        while start < len(ordered) and not (
            ordered[start][0] - e1 > 0.01 * max(ordered[start][0], 1)
        ):
            start += 1
        slopes += [(m2 - m1) / (e2 - e1) for e2, m2 in ordered[start:]]
    return slopes


def _spread(items: list[tuple[int, int]], most: int) -> list[tuple[int, int]]:
    if len(items) <= most:
        return items
    return [items[round(i * (len(items) - 1) / (most - 1))] for i in range(most)]


def _scored(rec: Reconciliation, rows: list[tuple[int, int, int]]) -> Reconciliation:
    """`rec` with its errors over (estimated, measured, step) rows, which must be in
    step order (each stretch's rows are taken as a slice)."""
    scale, errors = rec.scale, []
    firsts = [first for first, _ in rec.later]
    if firsts != sorted(firsts):  # not as fit makes them: as `at` reads them, row by row
        errors = [abs(rec.at(step).tokens(e) - m) / m for e, m, step in rows]
    # In order of their first step, the last of equal ones winning, as in `at`; rows
    # are in step order, so each stretch's rows are a slice of them.
    stretches = [] if errors else [(0, rec.overhead), *rec.later]
    steps = [step for _, _, step in rows] if len(stretches) > 1 else []
    for i, (first, overhead) in enumerate(stretches):
        start = bisect_left(steps, first) if steps else 0
        stop = bisect_left(steps, stretches[i + 1][0]) if i + 1 < len(stretches) else len(rows)
        errors += _errors(rows[start:stop], scale, overhead)
    return replace(
        rec,
        fitted_on=len(rows),
        median_error=statistics.median(errors),
        worst_error=max(errors),
    )


def _errors(rows: list[tuple[int, int, int]], scale: float, overhead: int) -> list[float]:
    """|sized(scale, estimated, overhead) - measured| / measured per row."""
    measured = list(map(itemgetter(1), rows))
    sent = [sized(scale, e, overhead) for e, _, _ in rows]
    return list(map(truediv, map(abs, map(sub, sent, measured)), measured))


def score(rec: Reconciliation, estimated: Sequence[int], measured: Sequence[int]) -> Reconciliation:
    """`rec` with its errors over these requests (for one set by hand or borrowed:
    `fitted_on` stays 0)."""
    rows = [(e, m, i) for i, (e, m) in enumerate(zip(estimated, measured, strict=True)) if m > 0]
    if not rows:
        return rec
    return replace(_scored(rec, rows), fitted_on=0)
