"""A large log uploaded through the dashboard, timed until browsable: `manage.py serve`
(uvicorn and its Celery worker on the file-system broker, the embedded default) on a
fresh SQLite database, the file posted to ``/upload/`` as a browser posts it, the
import job then followed in the database until its runs are shown and until it is
done. Used by suite `imports` (issue 14: browsable at >= 25 MB/s "end to end
(import_run and upload)")."""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench.suite_sweeps import serving

TIMEOUT = 900
"""Seconds an import may take before the bench gives up on it."""


def upload(path: Path, data_dir: Path) -> tuple[float, float, float, float]:
    """Seconds from the upload's first byte sent until its run is browsable and until
    the job is done (every estimator counted), and the peak resident memory (MB) of
    the worker's processes and of the web server's."""
    env = {**os.environ, "CONTEXTSIM_DATA_DIR": str(data_dir)}
    env.pop("DATABASE_URL", None)
    with serving(env) as (base, server):
        started = _post(base, path)
        shown, finished = _followed(data_dir / "contextsim.sqlite3")
        worker = max(map(_peak, _descendants(server.pid)), default=0.0)
        return shown - started, finished - started, worker, _peak(server.pid)


def _post(base: str, path: Path) -> float:
    """Post `path` to /upload/ as the upload form does (the local user is signed in on
    loopback; the CSRF token from the form's cookie); returns when the post began
    (epoch seconds)."""
    with httpx.Client(base_url=base, timeout=TIMEOUT) as http:
        http.get("/upload/").raise_for_status()
        token = http.cookies["csrftoken"]
        with path.open("rb") as stream:
            started = time.time()
            response = http.post(
                "/upload/",
                files={"files": (path.name, stream, "application/octet-stream")},
                data={"format": ""},
                headers={"X-CSRFToken": token, "Referer": f"{base}/upload/"},
            )
        response.raise_for_status()
    return started


def _followed(database: Path) -> tuple[float, float]:
    """Epoch seconds at which the only import job of `database` showed its runs and
    finished (it must end done)."""
    deadline = time.monotonic() + TIMEOUT
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)) as db:
        while time.monotonic() < deadline:
            row = db.execute(
                "SELECT status, shown, finished, error FROM webapp_importjob"
            ).fetchone()
            if row is not None and row[2] is not None:
                if row[0] != "done" or row[1] is None:
                    raise RuntimeError(f"the uploaded import ended {row[0]}, unshown: {row[3]}")
                return _epoch(row[1]), _epoch(row[2])
            time.sleep(0.05)
    raise RuntimeError(f"the uploaded import did not finish in {TIMEOUT} s")


def _epoch(stored: str) -> float:
    """A datetime as Django stores it in SQLite (UTC, no offset) in epoch seconds."""
    return datetime.fromisoformat(stored).replace(tzinfo=UTC).timestamp()


def _descendants(pid: int) -> list[int]:
    """Every process under `pid`, whichever of its threads started it (serve's keeper
    thread starts the worker again when it dies)."""
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(p) for p in children.read_text().split()]
        except FileNotFoundError:  # the thread ended meanwhile
            continue
    return [d for child in found for d in (child, *_descendants(child))]


def _peak(pid: int) -> float:
    """A process's high-water resident set size (VmHWM), MB; 0 once it has ended."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return 0.0
    return int(status.split("VmHWM:")[1].split()[0]) / 1024
