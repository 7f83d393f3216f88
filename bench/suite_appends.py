"""Suite `appends`: how many messages per second the streaming API takes into live runs
on SQLite, end to end: `manage.py serve` (uvicorn) on a fresh database, HTTP clients in
this process posting to ``POST /api/runs/<id>/messages/`` with an API key.

Workloads (WORKLOADS): batches of 1 and of 10 messages per request, from one client and
from CLIENTS clients at once (each streaming its own run, as that many agents would),
MESSAGES messages in all for each, every text its own (~300 characters; assistant
messages carry usage). Each client first appends WARMUP batches, not timed.
Figures: messages per second sustained per web process (issue 30: a batch of 1 >= 150/s,
a batch of 10 >= 2,000/s is enough; issue 14 had asked 300/s of a batch of 1, which
written-out SQL bought and the ORM does not) and CLIENTS clients' rate as a ratio to one
client's (at least 1x).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.report import Figure
from bench.suite_dashboard import _free_port, _say, start_django

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = {1: 600, 10: 4_000}
"""Batch size -> messages appended in all (per workload)."""
CLIENTS = 4
WARMUP = 5
TARGETS = {1: 150, 10: 2_000}
"""Batch size -> messages per second, at least (issue 30)."""
TEXT = "read the file, then call a tool and write the result back into the context " * 4


def _message(client: int, n: int) -> dict[str, Any]:
    """Message `n` of `client`'s run: user and assistant in turn, the assistant's with
    usage, every text its own."""
    text = f"{client}.{n}: {TEXT}"
    if n % 2 == 0:
        return {"role": "user", "content": text}
    return {"role": "assistant", "content": text, "usage": {"input_tokens": 1_000 + 40 * n}}


def _setup(data_dir: str) -> str:
    """A migrated SQLite database under `data_dir` with a user; returns its API key."""
    start_django(data_dir)
    from django.contrib.auth import get_user_model
    from django.db import connections

    from webapp.access.services.tokens import create_token

    owner, _ = get_user_model().objects.get_or_create(username="bench-appends")
    key = create_token(owner, "bench")[1]
    connections.close_all()  # the server writes this database from now on
    return key


def _new_run(http: httpx.Client, title: str) -> str:
    header = {"contextsim": 1, "runs": [{"title": title, "messages": []}]}
    response = http.post("/api/runs/", json=header)
    response.raise_for_status()
    run_id: str = response.json()["runs"][0]["id"]
    return run_id


def _stream(
    base: str,
    key: str,
    client: int,
    batch: int,
    total: int,
    ready: threading.Barrier,
    out: list[tuple[float, float]],
) -> None:
    """Append `total` messages to a new run, `batch` per request, after WARMUP batches
    and the other clients' (`ready`); (start, end) of the timed part go to `out`."""
    headers = {"Authorization": f"Bearer {key}"}
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
            run_id = _new_run(http, f"client {client}, batches of {batch}")
            url = f"/api/runs/{run_id}/messages/"
            sent = 0
            for n in range(WARMUP + total // batch):
                if n == WARMUP:
                    ready.wait(timeout=300)
                    started = time.perf_counter()
                messages = [_message(client, sent + i) for i in range(batch)]
                http.post(url, json={"messages": messages}).raise_for_status()
                sent += batch
            out.append((started, time.perf_counter()))
    except BaseException:
        ready.abort()  # the other clients stop waiting for this one
        raise


def _rate(base: str, key: str, batch: int, clients: int) -> float:
    """Messages per second with `clients` clients appending MESSAGES[batch] in all,
    from when all of them have warmed up until the last is done."""
    share = MESSAGES[batch] // clients
    spans: list[tuple[float, float]] = []
    ready = threading.Barrier(clients)
    threads = [
        threading.Thread(target=_stream, args=(base, key, c, batch, share, ready, spans))
        for c in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if len(spans) != clients:
        raise RuntimeError("a client failed (see above)")
    seconds = max(end for _, end in spans) - min(start for start, _ in spans)
    return share * clients / seconds


def _serve(data_dir: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CONTEXTSIM_DATA_DIR": data_dir}
    env.pop("DATABASE_URL", None)
    command = [sys.executable, "manage.py", "serve", "--port", str(port), "--no-demo"]
    return subprocess.Popen(
        [*command, "--no-worker"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait(base: str) -> None:
    for _ in range(300):
        try:
            httpx.get(f"{base}/", timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"the server did not answer at {base}")


def run() -> list[Figure]:
    data_dir = tempfile.mkdtemp(prefix="contextsim-bench-appends-")
    figures: list[Figure] = []
    server = None
    try:
        key = _setup(data_dir)
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        server = _serve(data_dir, port)
        _wait(base)
        for batch in MESSAGES:
            one = _rate(base, key, batch, 1)
            many = _rate(base, key, batch, CLIENTS)
            _say(f"batches of {batch}: 1 client {one:,.0f}/s, {CLIENTS} clients {many:,.0f}/s")
            label = f"batches of {batch}"
            figures += [
                Figure(
                    f"{label}, 1 client: messages per second", one, "/s", (">=", TARGETS[batch])
                ),
                Figure(
                    f"{label}, {CLIENTS} clients: messages per second",
                    many,
                    "/s",
                    (">=", TARGETS[batch]),
                ),
                Figure(f"{label}: {CLIENTS} clients / 1 client", many / one, "x", (">=", 1.0)),
            ]
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
        shutil.rmtree(data_dir, ignore_errors=True)
    return figures
