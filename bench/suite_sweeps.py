"""Suite `sweeps`: what a sweep costs per cell, and how fast the embedded default
(`manage.py serve`: SQLite, two worker processes on the file-system broker) gets
through a sweep of a fleet.

Setup, in a throwaway data folder: the seed incident's fleet (main agent, 8 subagents,
the re-check; chapters of 100,000 characters, counted with o200k only so the import
takes seconds) and a generated 10,000-step run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

from bench.report import Figure
from bench.suite_dashboard import ROOT, _free_port, _say, _wait, start_django
from bench.synthetic import long_run

POLICIES = ("turns", "mythex", "deepagents")
BUDGETS = (100_000, 200_000, 400_000, 800_000)


def _setup(data_dir: str) -> tuple[list[str], str]:
    """Django on a fresh SQLite database with the fleet and the long run; returns the
    fleet's run ids and the long run's."""
    start_django(data_dir)
    from contextsim.ingest.base import ParsedFile
    from contextsim.systems.seed.demo import demo_runs
    from webapp.models import Visibility
    from webapp.store.actions.saving import do_save_runs

    started = time.perf_counter()
    fleet = do_save_runs(
        ParsedFile("demo", demo_runs("subagents")),
        owner=None,
        visibility=Visibility.PUBLIC,
        estimators=("o200k",),
    )
    (long,) = do_save_runs(
        ParsedFile("native", (long_run(10_000),)),
        owner=None,
        visibility=Visibility.PUBLIC,
        estimators=("o200k",),
    )
    _say(f"imported {len(fleet) + 1} runs in {time.perf_counter() - started:.0f} s")
    return [r.public_id for r in fleet], long.public_id


def _cell_figures(long_id: str) -> list[Figure]:
    """Seconds per cell of the worker's service on the 10,000-step run, skeleton cached
    (as on a worker that has computed a cell of this run before)."""
    from django.contrib.auth import get_user_model

    from contextsim.analysis.sweep import grid
    from webapp.models import Run
    from webapp.sweeps import services as sweeps

    owner, _ = get_user_model().objects.get_or_create(username="bench")
    run = Run.objects.get(public_id=long_id)
    configs = grid(POLICIES, BUDGETS)
    sweep = sweeps.create_sweep(owner, [run], configs, estimator="o200k", hard_limit=1_000_000)
    times = []
    for cell in sweep.cells.order_by("config"):
        started = time.perf_counter()
        sweeps.run_cell(cell.pk)
        times.append(time.perf_counter() - started)
    _say("cell ms: " + " ".join(f"{t * 1000:.0f}" for t in times))
    return [
        Figure("cell on a 10,000-step run, first (skeleton read)", times[0], "s"),
        Figure("cell on a 10,000-step run, p50 of the others", statistics.median(times[1:]), "s"),
    ]


@contextmanager
def serving(env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`manage.py serve` (the web server and its two worker processes) under `env`,
    running until the block ends; yields its base URL and its process. One that does
    not stop is killed with its workers (its own session)."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), "--no-demo"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait(f"{base}/")
        yield base, server
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def _worker_figures(data_dir: str, fleet: list[str]) -> list[Figure]:
    """Wall-clock time of a sweep of the fleet through `manage.py serve`'s workers."""
    env = {**os.environ, "CONTEXTSIM_DATA_DIR": data_dir}
    with serving(env):
        args = [f"--run={i}" for i in fleet] + [f"--policy={p}" for p in POLICIES]
        args += ["--budgets=" + " ".join(map(str, BUDGETS)), "--estimator=o200k"]
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "manage.py", "sweep", *args, "--owner=bench", "--wait", "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        seconds = time.perf_counter() - started
    result = json.loads(done.stdout)
    cells = result["cells"]
    _say(f"{cells} cells by {result['workers']} worker processes in {seconds:.1f} s")
    return [
        Figure(f"sweep of {len(fleet)} runs x {cells // len(fleet)} configurations", seconds, "s"),
        Figure("cells per second, embedded workers", cells / seconds, "cells/s"),
    ]


def run() -> list[Figure]:
    data_dir = tempfile.mkdtemp(prefix="contextsim-bench-")
    try:
        fleet, long_id = _setup(data_dir)
        return _cell_figures(long_id) + _worker_figures(data_dir, fleet)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
