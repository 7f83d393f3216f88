"""The benchmark runner: ``python bench/run.py <suite> [--record]``.

Suites are registered in SUITES by name as "module:function"; each function takes no
arguments and returns the suite's figures (bench.report.Figure). The runner prints them
as a table and exits 1 when any target is missed. With ``--record`` it also writes the
figures, the machine and the targets as a dated section of bench/RESULTS.md (CI runs
without it, so the file changes only when someone records commit-worthy figures).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make `bench` and `contextsim` importable
    sys.path.insert(0, str(ROOT))

from bench.report import RESULTS, Figure, machine, markdown, record, table  # noqa: E402

SUITES: dict[str, str] = {
    "simulate": "bench.suite_simulate:run",
    "dashboard": "bench.suite_dashboard:run",
    "estimators": "bench.suite_estimators:run",
    "sweeps": "bench.suite_sweeps:run",
    "imports": "bench.suite_imports:run",
    "live": "bench.suite_live:run",
    "appends": "bench.suite_appends:run",
    "fleet": "bench.suite_fleet:run",
    "proxy": "bench.suite_proxy:run",
    "otlp": "bench.suite_otlp:run",
    "doors": "bench.suite_doors:run",
    "history": "bench.suite_history:run",
    "tune": "bench.suite_tune:run",
}
"""Suite name -> "module:function" returning list[Figure]."""


def load(suite: str) -> Callable[[], list[Figure]]:
    """The function of `suite`, imported only when that suite runs."""
    module, _, function = SUITES[suite].partition(":")
    found: Callable[[], list[Figure]] = getattr(importlib.import_module(module), function)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Run one suite; 0 when every target is met, 1 otherwise."""
    parser = argparse.ArgumentParser(prog="bench/run.py", description="Run one benchmark suite.")
    parser.add_argument("suite", choices=sorted(SUITES), help="which suite to run")
    parser.add_argument(
        "--record",
        action="store_true",
        help=f"write the figures as a dated section of {RESULTS.relative_to(ROOT)}",
    )
    args = parser.parse_args(argv)
    host = machine()
    print(f"{args.suite} on {host}", flush=True)
    start = time.perf_counter()
    figures = load(args.suite)()
    seconds = time.perf_counter() - start
    print(table(figures))
    misses = [f for f in figures if f.ok is False]
    print(f"\n{args.suite}: {len(figures)} figures, {len(misses)} targets missed, {seconds:.0f} s")
    for f in misses:
        print(f"  MISS {f.name}: {f.shown_value()} (target {f.shown_target()}) {f.note}".rstrip())
    if args.record:
        # The hour too: this machine's speed varies by up to 3x from one session to
        # the next, so one day may hold runs of two sessions that are not to be merged.
        day = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        record(args.suite, day, markdown(args.suite, day, figures, seconds, host))
        print(f"recorded in {RESULTS}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
