"""Scale-out, for real: PostgreSQL, a Redis broker and two Celery worker processes, driven
through the management commands the README gives. A sweep fans out one task per
(run, configuration) and both workers take part.

Skipped with the reason where PostgreSQL or Redis is not running, except in CI, where
it fails instead.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from contextsim.demo import demo_runs
from contextsim.formats.native import VERSION, run_to_dict
from tests.conftest import ROOT

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

PG = ("127.0.0.1", 5432)
REDIS = ("127.0.0.1", 6379)
REDIS_DB = 14  # a database of its own, emptied before and after


def _require(name: str, address: tuple[str, int]) -> None:
    try:
        socket.create_connection(address, timeout=2).close()
    except OSError:
        message = f"{name} is not running at {address[0]}:{address[1]}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@contextmanager
def postgres_and_redis(prefix: str, redis_db: int) -> Iterator[dict[str, str]]:
    """A new PostgreSQL database and an emptied Redis database, dropped and emptied
    after: the DATABASE_URL and CELERY_BROKER_URL to run against them. Skipped (failed
    in CI) where either service is not running."""
    _require("PostgreSQL", PG)
    _require("Redis", REDIS)
    import psycopg
    import redis

    name = f"{prefix}_{secrets.token_hex(4)}"
    admin = psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    broker = redis.Redis(*REDIS, db=redis_db)
    broker.flushdb()
    try:
        yield {
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{name}",
            "CELERY_BROKER_URL": f"redis://127.0.0.1:6379/{redis_db}",
        }
    finally:
        broker.flushdb()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture
def environment(tmp_path: Path) -> Iterator[dict[str, str]]:
    with postgres_and_redis("contextsim_scaleout", REDIS_DB) as found:
        yield {
            **os.environ,
            **found,
            "CONTEXTSIM_DATA_DIR": str(tmp_path / "data"),
            "CONTEXTSIM_LOCAL_USER": "",
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
        }


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _workers(env: dict[str, str], logs: Path, count: int) -> list[subprocess.Popen[bytes]]:
    procs = []
    for i in range(count):
        log = logs / f"worker{i}.log"
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "webapp",
                    "worker",
                    "--concurrency=1",
                    f"--hostname=w{i}@%h",
                    "--loglevel=INFO",
                    f"--logfile={log}",
                    "--without-gossip",
                    "--without-mingle",
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        logs_ready = [
            (logs / f"worker{i}.log").exists() and "ready" in (logs / f"worker{i}.log").read_text()
            for i in range(count)
        ]
        if all(logs_ready):
            return procs
        time.sleep(0.3)
    for proc in procs:
        proc.terminate()
    tails = [
        (logs / f"worker{i}.log").read_text()[-2000:] if (logs / f"worker{i}.log").exists() else ""
        for i in range(count)
    ]
    raise AssertionError(f"the Celery workers did not become ready within 120 s: {tails}")


def test_a_sweep_fans_out_over_two_workers_on_postgresql_and_redis(environment, tmp_path):
    env = environment
    _manage(env, "migrate", "--verbosity=0")
    runs = demo_runs("subagents", chapter_chars=4_000)[:4]
    files = []
    for i, run in enumerate(runs):
        path = tmp_path / f"subagent{i}.json"
        path.write_text(json.dumps({"contextsim": VERSION, "runs": [run_to_dict(run)]}))
        files.append(str(path))
    out = _manage(env, "import_run", *files, "--owner", "carol")
    ids = re.findall(r"/runs/([\w-]+)/", out)
    assert len(ids) == 4
    workers = _workers(env, tmp_path, 2)
    try:
        args = [f"--run={i}" for i in ids]
        out = _manage(
            env,
            "sweep",
            *args,
            "--policy=turns",
            "--policy=mythex",
            "--budgets=10000 20000 30000",
            "--hard-limit=40000",
            "--estimator=chars4",
            "--owner=carol",
            "--wait",
            "--timeout=180",
            "--json",
        )
    finally:
        for proc in workers:
            proc.terminate()
        for proc in workers:
            proc.wait(timeout=30)
    result = json.loads(out)
    assert result["cells"] == 4 * 6 and result["failed"] == 0
    assert result["workers"] == 2  # the cells were shared between both workers
    by_policy: dict[str, list[int]] = {}
    for config in result["configs"]:
        by_policy.setdefault(config["policy"], []).append(config["completed_runs"])
    # The seed incident: a subagent's single turn cannot be cut, so turns lets every
    # run grow until rejected; mythex clears old results and all finish.
    assert by_policy == {"turns": [0, 0, 0], "mythex": [4, 4, 4]}
