"""Suite `proxy`: what the capture proxy adds to a model call, and whether open streams
starve the dashboard (issue 13).

Two processes besides this one: the fake upstream of the tests (tests/upstream.py,
under uvicorn) and `manage.py serve` on a fresh SQLite database, its upstreams pointed
at the fake. Figures:
- added latency of a non-streaming Anthropic call, p50 and p95 over CALLS calls made
  alternately direct and through the proxy (targets <= 5 ms and <= 20 ms);
- added time to the first streamed byte, p50 (target <= 10 ms);
- the dashboard of a 1,000-step run, p95 over VIEWS views, idle and while STREAMS
  streamed calls are open through the proxy (target: within 2x of idle);
- the same calls through the path `contextsim run` gives its agent (a named session:
  `/proxy/s/<name>/anthropic`), added latency p50 (issue 34: <= 10 ms);
- `contextsim run -- COMMAND` with no server running: seconds from the command until
  the agent runs (it starts `serve` first), on a fresh data folder and on one with a
  database (issue 34: <= 3 s). It uses the default address, 127.0.0.1:8000, which must
  be free.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.report import Figure
from bench.suite_dashboard import _say, start_django
from contextsim.cli.run_agent import capture_env

ROOT = Path(__file__).resolve().parent.parent
CALLS = 400
VIEWS = 40
STREAMS = 64
STEPS = 1_000
PAUSE = 0.03
"""Seconds between two calls: a model takes far longer than the fake's 4 ms, and the
proxy records a call after answering it, so back-to-back calls would time the
recording of the one before, not the proxy's path."""
BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "Read the file and summarize it. " * 40}],
}
HEADERS = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}


def _free_port() -> int:
    from tests.upstream import free_port

    return free_port()


def _wait(url: str) -> None:
    for _ in range(600):
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} never answered")


@contextmanager
def _process(command: list[str], env: dict[str, str], url: str) -> Iterator[None]:
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait(url)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:  # streams to nobody it would still finish
            process.kill()
            process.wait()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _latencies(client: httpx.Client, direct: str, proxied: str) -> tuple[list[float], list[float]]:
    """Seconds per call, direct and through the proxy, made alternately so that both
    see the same state of the machine."""
    mine: list[float] = []
    theirs: list[float] = []
    for i in range(CALLS + 20):
        for url, out in ((direct, theirs), (proxied, mine)):
            time.sleep(PAUSE)
            started = time.perf_counter()
            client.post(url, json=BODY, headers=HEADERS).raise_for_status()
            if i >= 20:  # the first calls warm connections and caches
                out.append(time.perf_counter() - started)
    return theirs, mine


def _first_bytes(
    client: httpx.Client, direct: str, proxied: str
) -> tuple[list[float], list[float]]:
    theirs: list[float] = []
    mine: list[float] = []
    for i in range(CALLS // 4 + 10):
        for url, out in ((direct, theirs), (proxied, mine)):
            started = time.perf_counter()
            with client.stream("POST", url, json={**BODY, "stream": True}, headers=HEADERS) as r:
                pieces = r.iter_raw()
                next(pieces)
                if i >= 10:
                    out.append(time.perf_counter() - started)
                for _ in pieces:
                    pass
    return theirs, mine


def _views(client: httpx.Client, url: str) -> list[float]:
    out = []
    for _ in range(VIEWS):
        started = time.perf_counter()
        client.get(url).raise_for_status()
        out.append(time.perf_counter() - started)
    return out


def _open_streams(proxied: str, stop: threading.Event, opened: list[int]) -> list[threading.Thread]:
    """STREAMS streamed calls kept open (a piece every 0.25 s) until `stop`."""

    def one() -> None:
        slow = {**HEADERS, "x-fake-delay": "0.25", "x-fake-words": "2000"}
        with httpx.Client(timeout=120) as client:
            while not stop.is_set():
                with client.stream(
                    "POST", proxied, json={**BODY, "stream": True}, headers=slow
                ) as r:
                    opened.append(1)
                    for _ in r.iter_raw():
                        if stop.is_set():
                            break

    threads = [threading.Thread(target=one, daemon=True) for _ in range(STREAMS)]
    for thread in threads:
        thread.start()
    return threads


def _dashboard_run() -> str:
    from bench.synthetic import long_run
    from contextsim.ingest.base import ParsedFile
    from webapp.models import Visibility
    from webapp.store.actions.saving import do_save_runs

    (stored,) = do_save_runs(
        ParsedFile("native", (long_run(STEPS),)),
        owner=None,
        visibility=Visibility.PUBLIC,
        estimators=("chars4",),
    )
    return str(stored.public_id)


def run() -> list[Figure]:
    data_dir = tempfile.mkdtemp(prefix="bench-proxy-")
    try:
        return _measure(data_dir)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _measure(data_dir: str) -> list[Figure]:
    start_django(data_dir)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per call otherwise
    run_id = _dashboard_run()
    fake_port, port = _free_port(), _free_port()
    fake = f"http://127.0.0.1:{fake_port}"
    env = {
        **os.environ,
        "CONTEXTSIM_DATA_DIR": data_dir,
        "CONTEXTSIM_UPSTREAM_ANTHROPIC": fake,
        "CONTEXTSIM_UPSTREAM_OPENAI": fake,
    }
    env.pop("DATABASE_URL", None)
    upstream = [sys.executable, "-m", "uvicorn", "tests.upstream:Upstream", "--factory"]
    upstream += [
        "--port",
        str(fake_port),
        "--log-level",
        "warning",
        "--timeout-graceful-shutdown",
        "2",
    ]
    serve = [sys.executable, "manage.py", "serve", "--no-demo", "--no-worker", "--port", str(port)]
    base = f"http://127.0.0.1:{port}"
    with _process(upstream, env, fake + "/v1/models"), _process(serve, env, base + "/"):
        direct, proxied = f"{fake}/v1/messages", f"{base}/proxy/anthropic/v1/messages"
        named = capture_env(base, "bench-session")["ANTHROPIC_BASE_URL"] + "/v1/messages"
        with httpx.Client(timeout=60) as client:
            _say(f"{CALLS} calls direct and through the proxy")
            theirs, mine = _latencies(client, direct, proxied)
            _say(f"{CALLS} calls direct and through a named session's path")
            session_theirs, session_mine = _latencies(client, direct, named)
            _say("time to the first streamed byte")
            first_theirs, first_mine = _first_bytes(client, direct, proxied)
            dashboard = f"{base}/runs/{run_id}/"
            client.get(dashboard)  # the skeleton built once
            _say("dashboard idle")
            idle = _views(client, dashboard)
            stop, opened = threading.Event(), []
            threads = _open_streams(proxied, stop, opened)
            while len(opened) < STREAMS:
                time.sleep(0.05)
            _say(f"dashboard with {STREAMS} streams open")
            busy = _views(client, dashboard)
            stop.set()
            for thread in threads:
                thread.join(30)
    figures = _figures(theirs, mine, first_theirs, first_mine, idle, busy)
    added = [m - t for m, t in zip(session_mine, session_theirs, strict=True)]
    figures.append(
        Figure(
            "contextsim run: added latency per call, named session, p50",
            statistics.median(added) * 1000,
            "ms",
            ("<=", 10),
            f"direct p50 {statistics.median(session_theirs) * 1000:.2f} ms",
        )
    )
    return [*figures, *_agent_start(data_dir)]


START_S = 3.0  # issue 34: the agent runs within 3 s when no server runs
CHILD = "import time; print(time.time(), flush=True)"


def _agent_start(data_dir: str) -> list[Figure]:
    """Seconds from `contextsim run` until its agent runs, no server running."""
    from contextsim.cli.run_agent import DEFAULT_SERVER

    port = int(DEFAULT_SERVER.rsplit(":", 1)[1])
    try:
        httpx.get(DEFAULT_SERVER, timeout=1)
        busy = True
    except httpx.HTTPError:
        busy = False
    if busy:
        why = f"{DEFAULT_SERVER} answers already: nothing to start"
        return [Figure("contextsim run: agent started after, no server", None, "s", None, why)]
    figures = []
    for label, folder in (
        ("fresh data folder", Path(data_dir) / "run-fresh"),
        ("a database there", Path(data_dir) / "run-fresh"),
    ):
        env = {**os.environ, "CONTEXTSIM_DATA_DIR": str(folder)}
        env.pop("DATABASE_URL", None)
        env.pop("CONTEXTSIM_SERVER", None)
        started = time.time()
        done = subprocess.run(
            [sys.executable, "-m", "contextsim", "run", "--", sys.executable, "-c", CHILD],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        subprocess.run(["pkill", "-f", f"serve --no-demo --port {port}"], check=False)
        time.sleep(2)  # the server's port is free again
        try:
            seconds = float(done.stdout.split()[0]) - started
        except (IndexError, ValueError):
            figures.append(
                Figure(
                    f"contextsim run: agent started after, {label}",
                    None,
                    "s",
                    None,
                    done.stderr[-200:],
                )
            )
            continue
        figures.append(
            Figure(
                f"contextsim run: agent started after, no server, {label}",
                seconds,
                "s",
                ("<=", START_S),
            )
        )
    return figures


def _figures(
    theirs: list[float],
    mine: list[float],
    first_theirs: list[float],
    first_mine: list[float],
    idle: list[float],
    busy: list[float],
) -> list[Figure]:
    added = [m - t for m, t in zip(mine, theirs, strict=True)]
    note = f"direct p50 {statistics.median(theirs) * 1000:.2f} ms over {len(theirs)} calls"
    first_added = statistics.median(first_mine) - statistics.median(first_theirs)
    idle_p95, busy_p95 = _percentile(idle, 0.95), _percentile(busy, 0.95)
    return [
        Figure(
            "added latency, non-streaming, p50",
            statistics.median(added) * 1000,
            "ms",
            ("<=", 5),
            note,
        ),
        Figure(
            "added latency, non-streaming, p95", _percentile(added, 0.95) * 1000, "ms", ("<=", 20)
        ),
        Figure(
            "added time to first streamed byte, p50",
            first_added * 1000,
            "ms",
            ("<=", 10),
            f"direct {statistics.median(first_theirs) * 1000:.2f} ms",
        ),
        Figure("dashboard p95, idle", idle_p95, "s", None, f"{STEPS:,}-step run, {VIEWS} views"),
        Figure(f"dashboard p95, {STREAMS} streams open", busy_p95, "s", None),
        Figure(
            f"dashboard p95 with {STREAMS} streams / idle",
            busy_p95 / idle_p95,
            "x",
            ("<=", 2),
        ),
    ]


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps([f.__dict__ for f in run()], indent=1))
