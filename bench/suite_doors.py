"""Suite `doors`: huge requests while another client writes (issue 33).

`manage.py serve` (no worker) on a fresh SQLite database, its upstream the tests' fake
(tests/upstream.py). While an agent appends a message to a live run every WRITE_EVERY
seconds through the API, the suite sends, one after the other:
- a 200 MB model call through the capture proxy (over the proxy's default limit);
- a 700 MiB upload (over the upload limit), its body sent as fast as it is taken;
- a model call of CALL_MB MB through the proxy, within the limit: forwarded, answered and
  recorded (placed and counted before its write).
Figures: each one's answer and time; the appends' slowest answer while it ran (target
<= 1 s), and the server's peak resident memory (target <= 1 GB).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from bench.report import Figure
from bench.suite_dashboard import _say, start_django
from bench.suite_proxy import _free_port, _wait

ROOT = Path(__file__).resolve().parent.parent
WRITE_EVERY = 0.1
CALL_MB = 30
HEADERS = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}


class Appender:
    """An agent appending a message every WRITE_EVERY seconds; the slowest answer of
    each stretch."""

    def __init__(self, base: str, key: str, run_id: str) -> None:
        self.url = f"{base}/api/runs/{run_id}/messages/"
        self.headers = {"Authorization": f"Bearer {key}"}
        self.slowest = 0.0
        self.failed = 0
        self.count = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                started = time.perf_counter()
                body = {"messages": [{"role": "user", "content": f"message {self.count}"}]}
                try:
                    ok = client.post(self.url, json=body, headers=self.headers).status_code == 200
                except httpx.HTTPError:
                    ok = False
                took = time.perf_counter() - started
                self.slowest = max(self.slowest, took)
                self.failed += not ok
                self.count += 1
                self.stop.wait(WRITE_EVERY)

    def stretch(self) -> tuple[float, int]:
        """The slowest answer and the failures since the last stretch began."""
        found = (self.slowest, self.failed)
        self.slowest, self.failed = 0.0, 0
        return found


def _peak_rss(pid: int) -> float:
    """The process's peak resident memory so far, in MB (Linux: VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _huge_upload(base: str, size: int) -> tuple[int, float]:
    """Send a multipart upload of `size` bytes as fast as the server takes it; its
    status and the seconds until it answered."""
    host, port = base.removeprefix("http://").split(":")
    head = (
        f"POST /upload/ HTTP/1.1\r\nHost: {host}\r\nContent-Length: {size}\r\n"
        "Content-Type: multipart/form-data; boundary=xyz\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    with socket.create_connection((host, int(port)), timeout=60) as conn:
        conn.sendall(head)
        piece = b"0" * (1 << 20)
        sent = 0
        conn.setblocking(False)
        answer = b""
        while sent < size:
            try:
                answer += conn.recv(65536)
                break  # answered before the body was sent
            except BlockingIOError:
                pass
            try:
                sent += conn.send(piece)
            except BlockingIOError:
                time.sleep(0.001)
            except (BrokenPipeError, ConnectionResetError):
                break
        conn.setblocking(True)
        conn.settimeout(30)
        try:
            while b"\r\n" not in answer and (chunk := conn.recv(65536)):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    took = time.perf_counter() - started
    return (int(answer.split(b" ", 2)[1]) if answer else 0), took


def run() -> list[Figure]:
    data_dir = tempfile.mkdtemp(prefix="bench-doors-")
    try:
        return _measure(data_dir)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _measure(data_dir: str) -> list[Figure]:
    start_django(data_dir)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per append otherwise
    from django.contrib.auth.models import User

    from webapp.access.services.tokens import create_token

    owner = User.objects.create(username="agent")
    key = create_token(owner, "bench")[1]
    fake_port, port = _free_port(), _free_port()
    fake = f"http://127.0.0.1:{fake_port}"
    env = {**os.environ, "CONTEXTSIM_DATA_DIR": data_dir, "CONTEXTSIM_UPSTREAM_ANTHROPIC": fake}
    env.pop("DATABASE_URL", None)
    upstream = [sys.executable, "-m", "uvicorn", "tests.upstream:Upstream", "--factory"]
    upstream += ["--port", str(fake_port), "--log-level", "warning"]
    serve = [sys.executable, "manage.py", "serve", "--no-demo", "--no-worker", "--port", str(port)]
    base = f"http://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    fake_process = subprocess.Popen(upstream, cwd=ROOT, env=env, **quiet)  # type: ignore[call-overload]
    server = subprocess.Popen(serve, cwd=ROOT, env=env, **quiet)  # type: ignore[call-overload]
    figures: list[Figure] = []
    try:
        _wait(fake + "/v1/models")
        _wait(base + "/")
        header = {"contextsim": 1, "runs": [{"title": "agent", "messages": []}]}
        made = httpx.post(
            f"{base}/api/runs/", json=header, headers={"Authorization": f"Bearer {key}"}
        )
        appender = Appender(base, key, made.json()["runs"][0]["id"])
        appender.thread.start()
        time.sleep(1)
        appender.stretch()
        proxied = f"{base}/proxy/anthropic/v1/messages"
        calls = {**HEADERS, "x-contextsim-key": key}

        _say("a 200 MB model call through the proxy")
        body = json.dumps(
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "x" * 200_000_000}],
            }
        ).encode()
        started = time.perf_counter()
        answer = httpx.post(
            proxied,
            content=body,
            headers={**calls, "content-type": "application/json"},
            timeout=120,
        )
        took = time.perf_counter() - started
        del body
        time.sleep(1)
        slowest, failed = appender.stretch()
        figures += _stretch("200 MB proxied call", answer.status_code, took, slowest, failed)

        _say("a 700 MiB upload")
        status, took = _huge_upload(base, 700 * 1024 * 1024)
        time.sleep(1)
        slowest, failed = appender.stretch()
        figures += _stretch("700 MiB upload", status, took, slowest, failed)

        _say(f"a {CALL_MB} MB model call through the proxy, recorded")
        text = "Read the file and say what it does. " * (CALL_MB * 1_000_000 // 37)
        call = json.dumps(
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}
        ).encode()
        del text
        appender.stretch()
        started = time.perf_counter()
        answer = httpx.post(
            proxied,
            content=call,
            headers={**calls, "content-type": "application/json"},
            timeout=600,
        )
        took = time.perf_counter() - started
        recorded = _recorded(base, key, started)
        slowest, failed = appender.stretch()
        figures += _stretch(f"{CALL_MB} MB proxied call", answer.status_code, took, slowest, failed)
        figures.append(
            Figure(
                f"{CALL_MB} MB call: recorded after",
                recorded,
                "s",
                None,
                "its run listed by the API",
            )
        )
        appender.stop.set()
        appender.thread.join(10)
        peak = _peak_rss(server.pid)
        figures.append(
            Figure(
                "server peak memory",
                peak,
                "MB",
                ("<=", 1024),
                f"{appender.count} appends in all",
            )
        )
    finally:
        for process in (server, fake_process):
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
    return figures


def _recorded(base: str, key: str, since: float, wait: float = 300) -> float:
    """Seconds from `since` until the API lists the captured run."""
    while time.perf_counter() - since < wait:
        runs = httpx.get(
            f"{base}/api/runs/?format=capture", headers={"Authorization": f"Bearer {key}"}
        )
        if runs.status_code == 200 and runs.json()["runs"]:
            return time.perf_counter() - since
        time.sleep(0.5)
    return float("nan")


def _stretch(name: str, status: int, took: float, slowest: float, failed: int) -> list[Figure]:
    return [
        Figure(f"{name}: answer", float(status), "", None, f"in {took:.2f} s"),
        Figure(
            f"{name}: slowest append meanwhile",
            slowest,
            "s",
            ("<=", 1.0),
            f"{failed} append(s) failed" if failed else "none failed",
        ),
    ]
