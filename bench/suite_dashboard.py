"""Suite `dashboard`: server time and page weight of the run dashboard on a generated
10,000-step run, and the time until headless Chromium has drawn the chart.

The run is imported once into a throwaway SQLite database (counted with `chars4` only,
so the import takes seconds; the dashboard is queried with that estimator). Server
times come from the Django test client: 20 requests each for the full page and for a
control change (an htmx request with another budget), p50 and p95.
"""

from __future__ import annotations

import gc
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.report import Figure
from bench.synthetic import long_run

ROOT = Path(__file__).resolve().parent.parent
STEPS = 10_000
REQUESTS = 20
WARMUP = 5
COLD_VISITS = 5
WARM_VISITS = 3
VIEWPORT: dict[str, Any] = {"viewport": {"width": 1280, "height": 800}}
CHROMIUM = os.environ.get("CONTEXTSIM_CHROMIUM", "/usr/bin/chromium")


def _say(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


def start_django(data_dir: str) -> None:
    """Django in this process on a fresh, migrated SQLite database under `data_dir`."""
    os.environ["CONTEXTSIM_DATA_DIR"] = data_dir
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _setup(data_dir: str) -> str:
    """Django on a fresh SQLite database holding the generated run; returns its id."""
    start_django(data_dir)
    from contextsim.ingest.base import ParsedFile
    from webapp.models import Visibility
    from webapp.store.actions.saving import do_save_runs

    started = time.perf_counter()
    run = long_run(STEPS)
    (stored,) = do_save_runs(
        ParsedFile("native", (run,)),
        owner=None,
        visibility=Visibility.PUBLIC,
        estimators=("chars4",),
    )
    _say(f"imported {stored.message_count:,} messages in {time.perf_counter() - started:.0f} s")
    return str(stored.public_id)


def _percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[max(0, round(0.95 * len(ordered)) - 1)]


def _server_figures(public_id: str) -> tuple[list[Figure], int]:
    from django.test import Client

    client = Client(SERVER_NAME="localhost")
    url = f"/runs/{public_id}/"
    base = {"estimator": "chars4"}
    # Warm up as a server that has answered a few requests would be: the skeleton cache
    # filled and Python's specialising interpreter settled (excluded from the figures).
    for i in range(WARMUP):
        client.get(url, base)
        client.get(url, {**base, "budget": str(150_000 + 1_000 * i)}, HTTP_HX_REQUEST="true")
    gc.collect()
    gc.freeze()  # as `manage.py serve` does once it has started
    page_times, change_times = [], []
    weight = 0
    for i in range(REQUESTS):
        started = time.perf_counter()
        response = client.get(url, base)
        page_times.append(time.perf_counter() - started)
        assert response.status_code == 200, response.content[:500]
        weight = len(response.content)
        started = time.perf_counter()
        change = client.get(
            url, {**base, "budget": str(200_000 + 10_000 * i)}, HTTP_HX_REQUEST="true"
        )
        change_times.append(time.perf_counter() - started)
        assert change.status_code == 200, change.content[:500]
    _say("page ms: " + " ".join(f"{t * 1000:.0f}" for t in page_times))
    _say("change ms: " + " ".join(f"{t * 1000:.0f}" for t in change_times))
    page50, page95 = _percentiles(page_times)
    change50, change95 = _percentiles(change_times)
    return [
        Figure("dashboard page p50", page50, "s"),
        Figure("dashboard page p95", page95, "s"),
        Figure("control change p50", change50, "s"),
        Figure("control change p95", change95, "s", ("<=", 0.15)),
        Figure("page weight (HTML + figure JSON)", weight / 1e3, "kB", ("<=", 1_500)),
    ], weight


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _chart_figures(public_id: str, data_dir: str) -> list[Figure]:
    name = "chart drawn after navigation, first visit (Chromium)"
    if not Path(CHROMIUM).exists():
        return [Figure(name, None, "s", ("<=", 0.8), f"Chromium not found at {CHROMIUM}")]
    port = _free_port()
    env = {**os.environ, "CONTEXTSIM_DATA_DIR": data_dir}
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), "--no-demo", "--no-worker"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/runs/{public_id}/?estimator=chars4"
        _wait(url)
        cold, warm = _draw_times(url)
        return [
            Figure(name, cold, "s", ("<=", 0.8), f"median of {COLD_VISITS}, empty cache"),
            Figure(
                "chart drawn after navigation, next visits",
                warm,
                "s",
                None,
                f"median of {WARM_VISITS}, cached plotly.js",
            ),
        ]
    finally:
        server.terminate()
        server.wait(timeout=20)


def _wait(url: str) -> None:
    for _ in range(120):
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the server did not answer at {url}")


def _draw_times(url: str) -> tuple[float, float]:
    """(cold, warm): median seconds from navigation until the chart is drawn, over
    COLD_VISITS fresh browser contexts (each with an empty cache, in a browser that is
    already running, as a user's is), then over WARM_VISITS more visits in one context
    whose cache holds plotly.js. One sample alone varies by a third on this VM."""
    from playwright.sync_api import sync_playwright

    args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        warmup = browser.new_page()
        warmup.goto("about:blank")
        warmup.close()
        cold = [
            _visit(browser.new_context(**VIEWPORT), url, close=True) for _ in range(COLD_VISITS)
        ]
        context = browser.new_context(**VIEWPORT)
        _visit(context, url)
        warm = [_visit(context, url) for _ in range(WARM_VISITS)]
        browser.close()
    _say("chart drawn, cold s: " + " ".join(f"{t:.2f}" for t in cold))
    _say("chart drawn, warm s: " + " ".join(f"{t:.2f}" for t in warm))
    return statistics.median(cold), statistics.median(warm)


def _visit(context: Any, url: str, close: bool = False) -> float:
    page = context.new_page()
    started = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("#chart[data-drawn='1']", timeout=30_000)
    elapsed = time.perf_counter() - started
    page.close()
    if close:
        context.close()
    return elapsed


def run() -> list[Figure]:
    data_dir = tempfile.mkdtemp(prefix="contextsim-bench-")
    try:
        public_id = _setup(data_dir)
        figures, _ = _server_figures(public_id)
        figures += _chart_figures(public_id, data_dir)
        return figures
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
