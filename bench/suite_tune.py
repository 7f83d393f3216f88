"""Suite `tune`: the parameter search of `contextsim tune` (contextsim.analysis.tuning)
over TUNE_RUNS (default 200) generated runs of TUNE_STEPS (default 200) requests each,
as Claude Code sessions of a 200,000-token window, for three mechanisms: Claude Code's
auto-compact threshold and Anthropic's clear_tool_uses and clear_thinking (issue 35:
within 120 s on this machine). Figures: the time, the simulations the search ran
against the exhaustive grid's, and the recommendation against what was sent.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

from bench.report import Figure
from bench.synthetic import Spec, generate
from contextsim.cli.tune import prepare, report, tune_mechanism
from contextsim.counting.estimators import ESTIMATORS
from contextsim.systems.anthropic_api.tuning import MECHANISMS as API
from contextsim.systems.claude_code.tuning import MECHANISMS as CLAUDE_CODE

TARGET_S = 120.0  # issue 35: 200 runs of 200 requests over 3 mechanisms


def run() -> list[Figure]:
    runs_n = int(os.environ.get("TUNE_RUNS", "200"))
    steps = int(os.environ.get("TUNE_STEPS", "200"))
    runs = [
        replace(
            generate(Spec(steps, seed=n, huge_share=0.0, small_tokens=(200, 6_000))),
            format="claude-code",
            model="claude-sonnet-4-5",
            context_window=200_000,
        )
        for n in range(runs_n)
    ]
    estimator = ESTIMATORS["chars4"]
    started = time.perf_counter()
    prepared = [prepare(r, runs, estimator) for r in runs]
    figures = [
        Figure(f"{runs_n} runs of {steps} requests: prepared", time.perf_counter() - started)
    ]
    total_sims = total_grid = 0
    for mechanism in (*CLAUDE_CODE, *API):
        began = time.perf_counter()
        found, base = tune_mechanism(mechanism, prepared, estimator)
        said = report(mechanism, prepared, found, base)
        took = time.perf_counter() - began
        total_sims += found.simulated
        total_grid += found.grid
        best = said["recommended"]
        note = f"{found.simulated:,} simulations of the grid's {found.grid:,}; " + (
            f"recommended {best['setting']}: saves {100 * best['saved_share']:.1f}%"
            if best
            else "nothing to recommend"
        )
        figures.append(Figure(f"{mechanism.name}: searched", took, "s", None, note))
    whole = time.perf_counter() - started
    figures += [
        Figure(
            f"{runs_n} runs x {steps} requests, 3 mechanisms: tuned",
            whole,
            "s",
            ("<=", TARGET_S),
            f"{total_sims:,} simulations, the grid's {total_grid:,}",
        ),
        Figure("simulations / the grid's", total_sims / total_grid, "x"),
    ]
    return figures
