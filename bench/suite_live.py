"""Suite `live`: what following a growing run costs, at 2,000 and 20,000 messages.

A live run (webapp.store.actions.appends) is grown in a throwaway SQLite database to each
size; its dashboard is opened once (the skeleton built), then APPENDS times one more
message is appended (the streaming service, as `POST /api/runs/<id>/messages` does)
and the dashboard requested again (the Django test client, the estimator `chars4`).
Figures: the append, the view after it (p50; and apart, after a response with usage,
which fits the reconciliation again, and after a message without), the garbage
collector's time meanwhile, the view of the same run by a process that did not follow
it (its skeleton built from every message), the page's weight, this process's peak
memory, and
the ratios of the 20,000-message figures to the 2,000-message ones (issue 14: view <=
100 ms and within 1.5x, append within 1.2x, page <= 500 kB).
"""

from __future__ import annotations

import gc
import resource
import shutil
import statistics
import tempfile
import time

from bench.report import Figure
from bench.suite_dashboard import _say, start_django

SIZES = (2_000, 20_000)
APPENDS = 41
"""Appends (and views after each) per size: one sample varies by a third on this VM."""
BATCH = 500


def _message(i: int):  # type: ignore[no-untyped-def]
    from contextsim import model as core

    text = f"step {i}: read the file, then call a tool and write the result back " * 8
    if i % 2 == 0:
        return core.Message("user", (core.TextPart(text),))
    usage = core.Usage(1_000 + 40 * i)
    return core.Message("assistant", (core.TextPart(text),), usage)


def _grow(size: int):  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model

    from contextsim import model as core
    from webapp.models import Visibility
    from webapp.store.actions import appends as streaming

    owner, _ = get_user_model().objects.get_or_create(username=f"bench-{size}")
    run = streaming.do_create_live_run(owner, core.Run(f"live {size}", ()))
    run.visibility = Visibility.PUBLIC
    run.save(update_fields=["visibility"])
    for start in range(0, size, BATCH):
        batch = [_message(i) for i in range(start, min(start + BATCH, size))]
        run = streaming.do_append_messages(run, batch)
    return run


def _figures(size: int) -> dict[str, float]:
    from django.test import Client

    from webapp.store.actions import appends as streaming
    from webapp.store.cache import CACHE

    run = _grow(size)
    client = Client(SERVER_NAME="localhost")
    url = f"/runs/{run.public_id}/"
    query = {"estimator": "chars4"}
    assert client.get(url, query).status_code == 200  # the skeleton built, its builder kept
    appends, views = [], []
    collector = _Collector()
    gc.callbacks.append(collector)
    for i in range(APPENDS):
        started = time.perf_counter()
        run = streaming.do_append_messages(run, [_message(size + i)])
        appends.append(time.perf_counter() - started)
        started = time.perf_counter()
        response = client.get(url, query)
        views.append(time.perf_counter() - started)
        assert response.status_code == 200
    gc.callbacks.remove(collector)
    weight = len(response.content)
    run = streaming.do_append_messages(run, [_message(size + APPENDS)])
    CACHE.clear()  # as a process that did not follow the run
    started = time.perf_counter()
    assert client.get(url, query).status_code == 200
    fresh = time.perf_counter() - started
    _say(f"{size} messages: append ms " + " ".join(f"{t * 1000:.0f}" for t in appends))
    _say(f"{size} messages: view ms " + " ".join(f"{t * 1000:.0f}" for t in views))
    # Every other append is a response with usage: its view fits the reconciliation
    # again. The p50 of all views falls among the others; these say what each costs.
    measured = [v for i, v in enumerate(views) if _message(size + i).usage is not None]
    other = [v for i, v in enumerate(views) if _message(size + i).usage is None]
    return {
        "append": statistics.median(appends),
        "view": statistics.median(views),
        "measured": statistics.median(measured),
        "other": statistics.median(other),
        "fresh": fresh,
        "weight": weight / 1000,
        "collector": collector.seconds / APPENDS,
    }


class _Collector:
    """The garbage collector's time (gc.callbacks), in seconds."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started


def run() -> list[Figure]:
    data_dir = tempfile.mkdtemp(prefix="contextsim-bench-live-")
    try:
        start_django(data_dir)
        from webapp.runtime import heap

        heap.settle()  # as the server's entry points do once started
        found = {size: _figures(size) for size in SIZES}
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    small, big = (found[s] for s in SIZES)
    figures = []
    for size in SIZES:
        f = found[size]
        target = ("<=", 0.1) if size == SIZES[-1] else None
        figures += [
            Figure(f"{size:,} messages: append of one message, p50", f["append"], "s"),
            Figure(f"{size:,} messages: view after one more append, p50", f["view"], "s", target),
            Figure(f"{size:,} messages: view after a response with usage, p50", f["measured"], "s"),
            Figure(f"{size:,} messages: view after a message without, p50", f["other"], "s"),
            Figure(f"{size:,} messages: view by a process not following the run", f["fresh"], "s"),
            Figure(
                f"{size:,} messages: garbage collection per append and view",
                f["collector"],
                "s",
                note="mean",
            ),
            Figure(
                f"{size:,} messages: page weight",
                f["weight"],
                "kB",
                ("<=", 500) if size == SIZES[-1] else None,
            ),
        ]
    figures += [
        Figure("view after an append, 20k / 2k", big["view"] / small["view"], "x", ("<=", 1.5)),
        Figure("append, 20k / 2k", big["append"] / small["append"], "x", ("<=", 1.2)),
        Figure(
            "view after a response with usage, 20k / 2k", big["measured"] / small["measured"], "x"
        ),
        Figure("view after a message without usage, 20k / 2k", big["other"] / small["other"], "x"),
        Figure(
            "peak memory of the process following both runs",
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "MB",
        ),
    ]
    return figures
