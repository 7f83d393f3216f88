"""What every benchmark suite shares: figures with targets, timing, the table, RESULTS.md.

A suite returns a list of Figure; the runner prints them as a table and, when asked,
records them as a dated section of bench/RESULTS.md. A figure without a target is
informative; a figure with a target and no value (something missing) is a miss.
"""

from __future__ import annotations

import gc
import os
import platform
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
RESULTS_HEADER = (
    "# Benchmark results\n\n"
    "Written by `python bench/run.py <suite> --record` (one section per suite run,\n"
    "headed by its time). Figures without a target are informative. Timings depend on\n"
    "the machine named in each section and on its speed at the time, which varied by up\n"
    "to 3x between sessions (the same suite on the same code): compare the sections'\n"
    "reference loop (a fixed pure-Python workload), recorded from 2026-12-03 on.\n"
)


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured figure. `target` is (op, threshold) with op "<=" or ">=", or None
    for an informative figure; `value` None means it could not be measured (`note`)."""

    name: str
    value: float | None
    unit: str = "s"
    target: tuple[str, float] | None = None
    note: str = ""

    @property
    def ok(self) -> bool | None:
        """True when the target is met, False when missed, None when informative."""
        if self.target is None:
            return None
        if self.value is None:
            return False
        op, threshold = self.target
        return self.value <= threshold if op == "<=" else self.value >= threshold

    def shown_value(self) -> str:
        return "-" if self.value is None else _number(self.value, self.unit)

    def shown_target(self) -> str:
        if self.target is None:
            return ""
        op, threshold = self.target
        return f"{op} {threshold:g}{self.unit if self.unit in ('x', '%') else ' ' + self.unit}"

    def verdict(self) -> str:
        return {None: "", True: "ok", False: "MISS"}[self.ok]


def _number(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:.4f} s" if value < 1 else f"{value:.2f} s"
    if unit == "x":
        return f"{value:,.1f}x"
    if unit == "%":
        return f"{value:.1f}%"
    return f"{value:,.0f} {unit}".strip()


def best_of(fn: Callable[[], object], repeats: int = 5) -> float:
    """The fastest of `repeats` timed calls of `fn` (seconds, time.perf_counter), each
    after a full garbage collection so one call's garbage is not charged to the next."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def best_of_each(fns: Sequence[Callable[[], object]], repeats: int = 5) -> list[float]:
    """best_of for several functions, their calls interleaved (a, b, a, b, ...), so a
    burst of load from other processes does not skew a ratio between them."""
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], best_of(fn, 1))
    return best


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """(seconds, result) of one call of `fn`."""
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def reference_ms() -> float:
    """Milliseconds of a fixed pure-Python workload (best of 5): the speed of this
    machine at the time, so that sections recorded on slow and fast days compare."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        total = 0
        for i in range(300_000):
            total += i * i % 7
        best = min(best, time.perf_counter() - start)
    return best * 1000


def machine() -> str:
    """Cores, Python version, platform, load and speed at the start of the record."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    version = sys.version.split()[0]
    load = f", load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
    return (
        f"nproc {cores}, Python {version} ({platform.python_implementation()}), "
        f"{platform.system()} {platform.machine()}{load}, reference loop {reference_ms():.0f} ms"
    )


def table(figures: Sequence[Figure]) -> str:
    """A compact plain-text table: figure, value, target, verdict, note."""
    rows = [("figure", "value", "target", "", "note")]
    rows += [(f.name, f.shown_value(), f.shown_target(), f.verdict(), f.note) for f in figures]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [
        "  ".join(
            (r[0].ljust(widths[0]), r[1].rjust(widths[1]), *_pad(r[2:4], widths[2:]), r[4])
        ).rstrip()
        for r in rows
    ]
    lines.insert(1, "-" * max(len(line) for line in lines))
    return "\n".join(lines)


def _pad(cells: Sequence[str], widths: Sequence[int]) -> list[str]:
    return [c.ljust(w) for c, w in zip(cells, widths, strict=False)]


def markdown(suite: str, day: str, figures: Sequence[Figure], seconds: float, host: str) -> str:
    """The RESULTS.md section of one suite run; `host` is machine() at its start."""
    misses = [f.name for f in figures if f.ok is False]
    lines = [
        f"## {suite}, {day}",
        "",
        f"Machine: {host}. Suite run time: {seconds:.0f} s. "
        + (f"Targets missed: {len(misses)}." if misses else "All targets met."),
        "",
        "| figure | value | target | | note |",
        "|---|--:|---|---|---|",
    ]
    for f in figures:
        cells = (f.name, f.shown_value(), f.shown_target(), f.verdict(), f.note)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def record(suite: str, day: str, section: str, path: Path = RESULTS) -> None:
    """Write `section` into `path`, replacing a section of the same heading (suite and
    time, to the minute)."""
    text = path.read_text() if path.exists() else RESULTS_HEADER
    heading = re.compile(rf"^## {re.escape(suite)}, {re.escape(day)}\n.*?(?=^## |\Z)", re.M | re.S)
    if heading.search(text):
        text = heading.sub(lambda _: section + "\n", text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text.rstrip("\n") + "\n")
