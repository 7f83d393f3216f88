"""The seed incident, reproduced: 8 subagents told once to read 40 long Russian chapters,
a 400,000-token budget and a 1,000,000 hard limit."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from contextsim.analysis.problems import detect
from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import simulate
from contextsim.registry import POLICIES
from contextsim.systems.seed.demo import demo_runs
from tests.conftest import ROOT

LIMITS = {"budget": 400_000, "hard_limit": 1_000_000}


@pytest.fixture(scope="module")
def subagents():
    return demo_runs("subagents")


def outcome(runs, policy, estimator="o200k"):
    est = ESTIMATORS[estimator]
    return [simulate(build(r, est), POLICIES[policy], count=est.count, **LIMITS) for r in runs]


def test_turns_leaves_all_8_subagents_with_rejected_requests(subagents):
    sims = outcome(subagents, "turns")
    assert len(sims) == 8
    assert sum(not s.completed for s in sims) == 8


def test_mythex_rejects_none_of_the_8_and_all_finish(subagents):
    sims = outcome(subagents, "mythex")
    assert sum(not s.completed for s in sims) == 0
    assert all(max(r.sent for r in s.records) <= LIMITS["budget"] for s in sims)
    assert all(s.records[-1].stage == "clear" for s in sims)


def test_chars4_estimates_that_fit_the_budget_are_flagged_as_underestimates(subagents):
    est = ESTIMATORS["chars4"]
    sim = simulate(build(subagents[0], est), POLICIES["turns"], count=est.count, **LIMITS)
    flagged = [p for p in detect(sim) if p.kind == "underestimate"]
    steps = [sim.records[p.step] for p in flagged]
    assert all(s.sent <= 400_000 < (s.measured or 0) for s in steps)
    # The seed: about 640,000 tokens sent while chars/4 said it was under 400,000.
    assert max(s.measured or 0 for s in steps) > 600_000


def test_the_early_stop_run_is_flagged():
    (run,) = demo_runs("early-stop")
    est = ESTIMATORS["script"]
    problems = detect(simulate(build(run, est), POLICIES["mythex"], count=est.count, **LIMITS))
    (early,) = [p for p in problems if p.kind == "early_stop"]
    assert early.severity == "warning" and "saving space" in early.detail


def test_the_cli_reports_the_incident_as_json():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "contextsim",
            "simulate",
            "demo:subagents",
            "--policy",
            "turns",
            "--policy",
            "mythex",
            "--budget",
            "400000",
            "--hard-limit",
            "1000000",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    runs = json.loads(result.stdout)["runs"]
    turns = [r for r in runs if r["policy"] == "turns"]
    mythex = [r for r in runs if r["policy"] == "mythex"]
    assert len(turns) == len(mythex) == 8
    assert sum(r["rejected_steps"] > 0 for r in turns) == 8
    assert all(r["completed"] and r["rejected_steps"] == 0 for r in mythex)
    assert all(r["completed"] is False for r in turns)
