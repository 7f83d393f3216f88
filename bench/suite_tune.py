"""Suite `tune`: the parameter search over TUNE_RUNS (default 200) generated runs of
TUNE_STEPS (default 200) requests each, as Claude Code sessions of a 200,000-token
window, for three mechanisms: Claude Code's auto-compact threshold and Anthropic's
clear_tool_uses and clear_thinking (issue 35: within 120 s on this machine with the
embedded default).

Two ways: the search of `contextsim tune` in this process (contextsim.analysis.tuning),
and the same runs stored in a throwaway data folder and tuned as a job by `manage.py
serve`'s workers (SQLite, two worker processes on the file-system broker), from
`manage.py tune --wait` to its answer. Figures: the times, the simulations the search
ran against the exhaustive grid's, and the recommendation against what was sent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace

from bench.report import Figure
from bench.suite_dashboard import ROOT, _say, start_django
from bench.suite_sweeps import serving
from bench.synthetic import Spec, generate
from contextsim.cli.tune import prepare, report, tune_mechanism
from contextsim.counting.estimators import ESTIMATORS
from contextsim.model import Run
from contextsim.registry import EVERY_MECHANISM

TARGET_S = 120.0  # issue 35: 200 runs of 200 requests over 3 mechanisms
MECHANISMS = tuple(
    EVERY_MECHANISM[n] for n in ("claude-code-auto-compact", "clear-tool-uses", "clear-thinking")
)


def _runs(count: int, steps: int) -> list[Run]:
    return [
        replace(
            generate(Spec(steps, seed=n, huge_share=0.0, small_tokens=(200, 6_000))),
            format="claude-code",
            model="claude-sonnet-4-5",
            context_window=200_000,
        )
        for n in range(count)
    ]


def run() -> list[Figure]:
    runs_n = int(os.environ.get("TUNE_RUNS", "200"))
    steps = int(os.environ.get("TUNE_STEPS", "200"))
    runs = _runs(runs_n, steps)
    figures = _in_process(runs, steps)
    data_dir = tempfile.mkdtemp(prefix="contextsim-bench-")
    try:
        return figures + _as_a_job(data_dir, runs, steps)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _in_process(runs: list[Run], steps: int) -> list[Figure]:
    """`contextsim tune`'s search, in this process."""
    runs_n = len(runs)
    estimator = ESTIMATORS["chars4"]
    started = time.perf_counter()
    prepared = [prepare(r, runs, estimator) for r in runs]
    figures = [
        Figure(f"{runs_n} runs of {steps} requests: prepared", time.perf_counter() - started)
    ]
    total_sims = total_grid = 0
    for mechanism in MECHANISMS:
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
            f"{runs_n} runs x {steps} requests, 3 mechanisms: tuned in one process",
            whole,
            "s",
            None,
            f"{total_sims:,} simulations, the grid's {total_grid:,}",
        ),
        Figure("simulations / the grid's", total_sims / total_grid, "x"),
    ]
    return figures


def _as_a_job(data_dir: str, runs: list[Run], steps: int) -> list[Figure]:
    """The runs stored, then tuned by `manage.py tune --wait` through `serve`'s workers."""
    start_django(data_dir)
    from contextsim.ingest.base import ParsedFile
    from webapp.models import Visibility
    from webapp.store.actions.saving import do_save_runs

    began = time.perf_counter()
    stored = do_save_runs(
        ParsedFile("native", tuple(runs)),
        owner=None,
        visibility=Visibility.PUBLIC,
        estimators=("chars4",),
    )
    _say(f"stored {len(stored)} runs in {time.perf_counter() - began:.0f} s")
    env = {**os.environ, "CONTEXTSIM_DATA_DIR": data_dir}
    with serving(env):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "manage.py", "tune", "--estimator=chars4", "--wait", "--json"]
            + [f"--run={r.public_id}" for r in stored]
            + [f"--mechanism={m.name}" for m in MECHANISMS],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=True,
        )
        seconds = time.perf_counter() - started
    views = json.loads(done.stdout)
    sims = sum(v["simulations"] for v in views)
    grid = sum(v["grid_simulations"] for v in views)
    return [
        Figure(
            f"{len(runs)} runs x {steps} requests, 3 mechanisms: tuned as a job",
            seconds,
            "s",
            ("<=", TARGET_S),
            f"embedded default, two worker processes; {sims:,} simulations, the grid's {grid:,}",
        ),
        Figure("simulations / the grid's, as a job", sims / grid, "x"),
    ]
