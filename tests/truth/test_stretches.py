"""Stretches of a fit and the weights of its residuals."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contextsim.truth.stretches import unlogged_breaks, weighted_median, weights


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30))
def test_with_equal_shares_the_weighted_median_is_a_median_value(values):
    found = weighted_median(values, [1.0] * len(values))
    ordered = sorted(values)
    assert found == ordered[(len(ordered) - 1) // 2]


def test_small_requests_weigh_more_but_never_more_than_a_quarter_of_the_median():
    assert weights([1_000, 100_000, 100_000]) == [1 / 25_000, 1 / 100_000, 1 / 100_000]


def test_a_drift_and_a_lone_odd_request_are_no_stretch_but_a_step_is():
    rows = [(1_000 * i, 1_100 * i + 5_000, (0, i)) for i in range(1, 20)]  # drift
    assert unlogged_breaks(rows, 1.0)[1] == set()
    odd = [(e, m + (30_000 if i == 9 else 0), k) for i, (e, m, k) in enumerate(rows)]
    assert unlogged_breaks(odd, 1.1)[1] == set()
    step = [(e, m + (30_000 if i >= 9 else 0), k) for i, (e, m, k) in enumerate(rows)]
    marked, new = unlogged_breaks(step, 1.1)
    assert len(new) == 1 and marked[9][2][0] in new and marked[8][2][0] not in new
