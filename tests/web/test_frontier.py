"""The frontier of a sweep: per policy, cost and largest request against the runs it
finishes, one point per budget."""

from __future__ import annotations

from contextsim.analysis.sweep import Config, Totals
from webapp.sweeps.frontier import frontier_figures


def totals(finished: int, peak: int, cost: float) -> Totals:
    return Totals(8, finished, 0, 8 - finished, peak, peak * 8, 0, cost)


def test_each_policy_is_a_line_through_its_budgets_in_order():
    configs = [
        Config("mythex", 200_000),
        Config("turns", 100_000),
        Config("mythex", 100_000),
        Config("turns", 200_000, (("batch", "2"),)),
    ]
    found = [
        totals(8, 190_000, 4.5),
        totals(0, 99_000, 1.0),
        totals(6, 95_000, 2.25),
        totals(3, 180_000, 3.0),
    ]
    figures = frontier_figures(configs, found, 8)
    cost = {t["name"]: t for t in figures["cost"]["data"]}
    assert list(cost) == ["mythex", "turns", "turns batch=2"]
    assert cost["mythex"]["x"] == [6, 8] and cost["mythex"]["y"] == [2.25, 4.5]
    assert cost["mythex"]["text"] == ["100k", "200k"]
    peak = {t["name"]: t for t in figures["peak"]["data"]}
    assert peak["turns"]["x"] == [0] and peak["turns"]["y"] == [99_000]
    assert figures["cost"]["layout"]["xaxis"]["range"] == [-0.5, 8.5]


def test_configurations_with_nothing_done_are_left_out():
    figures = frontier_figures([Config("turns", 1_000)], [Totals(0, 0, 0, 0, 0, 0, 0, 0.0)], 3)
    assert figures["cost"]["data"] == [] and figures["peak"]["data"] == []
