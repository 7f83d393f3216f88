"""Suite `fleet`: a sweep of 1,000 generated runs of 200 steps x 8 configurations
(8,000 cells), through the embedded default (`manage.py serve`: SQLite, two worker
processes) and through 1, 2 and 4 Celery worker processes on PostgreSQL and Redis.

Each run's cells are one task (its skeleton read once). Figures: cells per second per
worker process on SQLite (target >= 50), and the speed-up of 2 and 4 workers over 1 on
PostgreSQL (target >= 3x for 4). A worker process is CPU-bound, so the speed-up cannot
pass the machine's cores: the figure's note says how many there are.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import Figure
from bench.suite_dashboard import ROOT, _say
from bench.suite_sweeps import serving

RUNS = 1_000
POLICIES = ("turns", "mythex")
BUDGETS = (20_000, 40_000, 80_000, 160_000)
CELLS = RUNS * len(POLICIES) * len(BUDGETS)
LIMITS = {"CONTEXTSIM_MAX_SWEEP_CELLS": str(CELLS), "CONTEXTSIM_MAX_QUEUED_CELLS": str(CELLS)}


def _import(env: dict[str, str]) -> list[str]:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity=0"], cwd=ROOT, env=env, check=True
    )
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.fleet", str(RUNS)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    ids: list[str] = json.loads(done.stdout)
    _say(f"imported {len(ids)} runs in {time.perf_counter() - started:.0f} s")
    return ids


def _sweep(env: dict[str, str], ids: list[str], title: str) -> tuple[float, int]:
    """Seconds for the workers to get through the sweep, and how many took part."""
    args = [f"--run={i}" for i in ids] + [f"--policy={p}" for p in POLICIES]
    args += ["--budgets=" + " ".join(map(str, BUDGETS)), "--estimator=chars4"]
    args += ["--owner=bench", f"--title={title}", "--wait", "--json", "--timeout=1800"]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "manage.py", "sweep", *args, "--hard-limit=200000"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"the sweep failed: {done.stderr[-2000:]}")
    seconds = time.perf_counter() - started
    result = json.loads(done.stdout)
    assert result["cells"] == CELLS and result["failed"] == 0, result
    _say(f"{title}: {CELLS} cells by {result['workers']} workers in {seconds:.1f} s")
    return seconds, int(result["workers"])


def _embedded() -> list[Figure]:
    data_dir = tempfile.mkdtemp(prefix="contextsim-bench-fleet-")
    env = {**os.environ, **LIMITS, "CONTEXTSIM_DATA_DIR": data_dir}
    env.pop("DATABASE_URL", None)
    env.pop("CELERY_BROKER_URL", None)
    try:
        ids = _import(env)
        with serving(env):
            seconds, workers = _sweep(env, ids, "embedded")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return [
        Figure(f"sweep of {RUNS:,} runs x 8 configurations, embedded", seconds, "s"),
        Figure(
            "cells per second per worker process, SQLite",
            CELLS / seconds / workers,
            "cells/s",
            (">=", 50),
            f"{workers} worker processes",
        ),
    ]


def _scaled() -> list[Figure]:
    from tests.web.test_scale_out import _workers, postgres_and_redis

    logs = Path(tempfile.mkdtemp(prefix="contextsim-bench-fleet-logs-"))
    times: dict[int, float] = {}
    try:
        with postgres_and_redis("contextsim_bench_fleet", 13) as found:
            env = {**os.environ, **LIMITS, **found}
            env["CONTEXTSIM_DATA_DIR"] = str(logs / "data")
            ids = _import(env)
            for count in (1, 2, 4):
                procs = _workers(env, logs, count)
                try:
                    times[count], _ = _sweep(env, ids, f"{count} workers")
                finally:
                    for proc in procs:
                        proc.terminate()
                    for proc in procs:
                        proc.wait(timeout=60)
                for log in logs.glob("worker*.log"):
                    log.unlink()
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    cores = f"{os.cpu_count()} cores"
    return [
        Figure("PostgreSQL + Redis, 1 worker: cells per second", CELLS / times[1], "cells/s"),
        Figure("speed-up of 2 workers over 1", times[1] / times[2], "x", None, cores),
        Figure("speed-up of 4 workers over 1", times[1] / times[4], "x", (">=", 3.0), cores),
    ]


def run() -> list[Figure]:
    return _embedded() + _scaled()
