"""The composition chart stays bounded however long the run and however many its
problems: every trace sampled to the chart's points, the most severe problems marked
exactly and the others counted per bucket (all of them stay in the problems list)."""

from __future__ import annotations

import json

from bench.synthetic import long_run
from contextsim.analysis.problems import Problem
from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import simulate
from contextsim.registry import POLICIES
from webapp.dashboard.charts.composition import MAX_MARKED, MAX_POINTS, composition_figure

EST = ESTIMATORS["chars4"]


def _sim(steps: int):
    return simulate(
        build(long_run(steps), EST),
        POLICIES["turns"],
        budget=2_000,
        hard_limit=3_000,
        count=EST.count,
    )


def test_a_problem_at_every_one_of_20000_steps_leaves_the_figure_bounded():
    sim = _sim(20_000)
    n = len(sim.records)
    problems = [
        Problem(k, "cache_break", "warning", "cache broken: " + "x" * 2_000) for k in range(n)
    ]
    problems += [
        Problem(k, "rejected", "error", f"over the hard limit at {k}") for k in range(0, n, 97)
    ]
    figure = composition_figure(sim, problems)
    markers = next(t for t in figure["data"] if t["name"] == "problems")
    assert len(markers["x"]) <= MAX_POINTS + MAX_MARKED
    assert all(len(t["x"]) <= MAX_POINTS + MAX_MARKED for t in figure["data"])
    assert len(json.dumps(figure)) < 200_000
    # The most severe ("error" sorts before "warning") are marked where they are.
    errors = {p.step for p in problems if p.severity == "error"}
    exact = [
        x
        for x, text in zip(markers["x"], markers["text"], strict=True)
        if text.startswith("rejected")
    ]
    assert set(exact) <= errors and len(exact) == min(len(errors), MAX_MARKED)
    # Every other problem step is counted in some bucket's marker.
    counted = 0
    for text in markers["text"]:
        for line in text.split("<br>"):
            if "more problem step" in line:
                counted += int(line.split()[0])
    assert counted + len(exact) == n


def test_a_short_run_marks_every_problem_step_with_its_detail():
    sim = _sim(300)
    n = len(sim.records)
    assert n <= MAX_POINTS
    problems = [Problem(k, "cache_break", "warning", f"detail {k}") for k in range(n)]
    markers = next(t for t in composition_figure(sim, problems)["data"] if t["name"] == "problems")
    assert markers["x"] == list(range(n))
    assert markers["text"] == [f"cache_break: detail {k}" for k in range(n)]
