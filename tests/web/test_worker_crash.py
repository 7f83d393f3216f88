"""A worker killed with SIGKILL mid-sweep and mid-import, for real: on the embedded
setup (SQLite file, file-system broker, which deletes a task once a worker fetches it)
and on PostgreSQL with Redis. A new worker, started as `serve` starts one (celery beat
inside, running the job reaper), finishes the job: every cell computed once, no cell
left running, and the import's runs saved exactly once.

The PostgreSQL and Redis case is skipped with the reason where they are not running,
except in CI, where it fails instead.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextsim.systems.native.format import VERSION, run_to_dict
from contextsim.systems.seed.demo import demo_runs
from tests.conftest import ROOT
from tests.web.test_scale_out import REDIS, _manage, _require, postgres_and_redis
from webapp.management.commands.serve import worker_command

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")),
    reason="sets up its own databases and brokers: run once, in the pass without DATABASE_URL",
)

LEASE = 3  # seconds: recovery within a few of them, and long imports renew it
REDIS_DB = 13
WORDS = "the agent reads a file then calls a tool and writes результат 结果 answer"


def _base_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "CONTEXTSIM_DATA_DIR": str(tmp_path / "data"),
        "CONTEXTSIM_LOCAL_USER": "",
        "CONTEXTSIM_JOB_LEASE": str(LEASE),
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
    }


@pytest.fixture(
    params=["embedded", pytest.param("redis", marks=[pytest.mark.postgres, pytest.mark.redis])]
)
def environment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    env = _base_env(tmp_path)
    if request.param == "embedded":
        env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'contextsim.sqlite3'}"
        env["CELERY_BROKER_URL"] = "filesystem://"
        yield env
        return
    with postgres_and_redis("contextsim_crash", REDIS_DB) as found:
        yield {**env, **found}


def _rows(env: dict[str, str], sql: str) -> list[tuple[Any, ...]]:
    url = env["DATABASE_URL"]
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30) as db:
            return db.execute(sql).fetchall()
    import psycopg

    with psycopg.connect(url.replace("postgres://", "postgresql://", 1)) as db:
        return db.execute(sql).fetchall()


class Worker:
    """A worker as `serve` starts one, in its own process group, so that SIGKILL takes
    its pool and its beat with it."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log = log
        schedule = Path(env["CONTEXTSIM_DATA_DIR"]) / "celerybeat-schedule"
        self.process = subprocess.Popen(
            worker_command(str(schedule), "--loglevel=INFO", f"--logfile={log}"),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self) -> str:
        return self.log.read_text()[-3000:] if self.log.exists() else "(no log)"


def _until(what: str, check, timeout: float, worker: Worker, every: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"{what} within {timeout} s; worker log: {worker.tail()}")


def _import_runs(env: dict[str, str], tmp_path: Path) -> list[str]:
    files = []
    for i, run in enumerate(demo_runs("subagents")[:4]):
        path = tmp_path / f"subagent{i}.json"
        path.write_text(json.dumps({"contextsim": VERSION, "runs": [run_to_dict(run)]}))
        files.append(str(path))
    out = _manage(env, "import_run", *files, "--owner", "carol")
    ids = re.findall(r"/runs/([\w-]+)/", out)
    assert len(ids) == 4
    return ids


def _cells(env: dict[str, str]) -> dict[str, int]:
    return dict(_rows(env, "SELECT status, COUNT(*) FROM webapp_sweepcell GROUP BY status"))


def test_a_sweep_finishes_after_its_worker_is_killed(environment, tmp_path):
    env = environment
    _manage(env, "migrate", "--verbosity=0")
    ids = _import_runs(env, tmp_path)
    budgets = " ".join(str(b) for b in range(20_000, 120_001, 4_000))  # 26 budgets
    _manage(
        env,
        "sweep",
        *[f"--run={i}" for i in ids],
        "--policy=turns",
        "--policy=mythex",
        f"--budgets={budgets}",
        "--hard-limit=200000",
        "--estimator=chars4",
        "--owner=carol",
    )
    total = 4 * 2 * 26
    first = Worker(env, tmp_path / "worker1.log")
    try:
        # Killed while cells are being computed: their leases must run out, and on the
        # file-system broker the tasks the worker had fetched are gone with it.
        _until(
            "cells being computed",
            lambda: _cells(env).get("done") and _cells(env).get("running"),
            120,
            first,
            every=0,
        )
        first.kill()
    finally:
        first.stop()
    at_kill = _cells(env)
    killed = time.monotonic()
    assert at_kill.get("done", 0) < total  # killed mid-sweep
    second = Worker(env, tmp_path / "worker2.log")
    try:
        _until(
            "every cell done after a restart",
            lambda: _cells(env).get("done") == total,
            120,
            second,
            every=0.2,
        )
        finished = _rows(env, "SELECT finished FROM webapp_sweep")
        recovered = time.monotonic() - killed
    finally:
        second.stop()
    assert _cells(env) == {"done": total}  # none failed, none left running or queued
    assert finished[0][0] is not None
    retried = _rows(env, "SELECT COUNT(*) FROM webapp_sweepcell WHERE attempts >= 2")[0][0]
    resent = len(re.findall(r"SweepCell \d+: queued again", second.log.read_text()))
    assert resent >= retried
    print(
        f"{env['CELERY_BROKER_URL'].split(':')[0]}: sweep of {total} cells killed with "
        f"{at_kill}: all done {recovered:.1f} s after a restart; {resent} sent again by "
        f"the reaper, {retried} of them taken up a second time"
    )


def _big_log(path: Path, messages: int) -> None:
    """A native log of `messages` messages of 400 words each, every one different (the
    importer counts each distinct text once)."""
    words = WORDS.split()
    pick = random.Random(7).choice
    body = []
    for i in range(messages):
        text = " ".join(pick(words) for _ in range(400))
        role = "user" if i % 2 == 0 else "assistant"
        usage = {"usage": {"input_tokens": 1000 + 500 * i}} if role == "assistant" else {}
        body.append({"role": role, "content": text, **usage})
    run = {"title": "big", "session_id": "big", "messages": body}
    path.write_text(json.dumps({"contextsim": VERSION, "runs": [run]}))


def test_an_import_finishes_once_after_its_worker_is_killed(environment, tmp_path):
    env = environment
    _manage(env, "migrate", "--verbosity=0")
    log = tmp_path / "big.json"
    _big_log(log, 8_000)  # about 30 MB: several seconds to import
    out = _manage(env, "import_run", str(log), "--queue", "--owner", "carol")
    assert "queued as job" in out
    status = "SELECT status, attempts FROM webapp_importjob"
    first = Worker(env, tmp_path / "worker1.log")
    writing = (
        "SELECT COUNT(*) FROM webapp_importjob "
        "WHERE stage = 'writing' AND messages_written BETWEEN 1 AND 7999"
    )
    try:
        # Killed while it writes its messages, some of them written already.
        _until("the import writing", lambda: _rows(env, writing)[0][0], 120, first)
        first.kill()
    finally:
        first.stop()
    assert _rows(env, status) == [("running", 1)]
    # Nothing shown; what the lost attempt had written is unseen (ready false).
    assert _rows(env, "SELECT COUNT(*) FROM webapp_run WHERE ready")[0][0] == 0
    second = Worker(env, tmp_path / "worker2.log")
    try:
        _until(
            "the import done after a restart",
            lambda: _rows(env, status)[0][0] not in ("queued", "running"),
            180,
            second,
            every=0.2,
        )
    finally:
        second.stop()
    assert _rows(env, status) == [("done", 2)]
    runs = _rows(env, "SELECT title, message_count, ready FROM webapp_run")
    assert runs == [("big", 8_000, True)]  # exactly one run, whole, nothing left over
    messages = _rows(env, "SELECT COUNT(*) FROM webapp_message")[0][0]
    assert messages == 8_000
    print(f"{env['CELERY_BROKER_URL'].split(':')[0]}: import killed mid-parse: done at attempt 2")


def _reads_waiting_tasks(app) -> None:
    from webapp.tasks import _queue_empty

    assert _queue_empty(app) is True
    app.send_task("webapp.tasks.reap_jobs")  # no worker listens to this broker
    assert _queue_empty(app) is False


def test_the_reaper_tells_an_empty_file_system_queue(tmp_path):
    from celery import Celery

    folder = str(tmp_path)
    options = {"data_folder_in": folder, "data_folder_out": folder, "store_processed": False}
    _reads_waiting_tasks(Celery(broker="filesystem://", broker_transport_options=options))


@pytest.mark.redis
def test_the_reaper_tells_an_empty_redis_queue():
    _require("Redis", REDIS)
    import redis
    from celery import Celery

    broker = redis.Redis(*REDIS, db=REDIS_DB)
    broker.flushdb()
    try:
        # Redis keeps no empty list: an empty queue is no key at all.
        _reads_waiting_tasks(Celery(broker=f"redis://127.0.0.1:6379/{REDIS_DB}"))
    finally:
        broker.flushdb()
