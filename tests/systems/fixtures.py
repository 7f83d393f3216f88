"""Each system's fixture files (tests/systems/<system>/fixtures/), checked one line per
case, as Zulip checks its webhooks' fixtures: what a file imports as, run by run, or the
error that refuses it. The files are small hand-made logs; the figures in the tables are
read off them (a request's context is its usage's input + cache read + cache write)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextsim.ingest.base import FormatError
from contextsim.ingest.detect import parse_path
from contextsim.model import Run, steps

Figures = tuple[int, int, int | None, int, int]
"""Per run: requests (the pending one included), requests with measured usage, the
largest measured context in tokens (None: none measured), compactions, tool calls."""


def fixture(test_file: str, name: str) -> Path:
    """The fixture file `name` beside the test module `test_file`."""
    return Path(test_file).parent / "fixtures" / name


def figures(run: Run) -> Figures:
    measured = [s.usage.context for s in steps(run) if s.usage is not None]
    return (
        len(steps(run)),
        len(measured),
        max(measured, default=None),
        len(run.compactions),
        sum(len(m.tool_calls) for m in run.messages),
    )


def imported(
    test_file: str, name: str, format: str | None = None
) -> tuple[str, list[Figures], int]:
    """The format a fixture is detected as (or read as, when `format` is given), the
    figures of each run it imports as, and how many warnings it gives."""
    parsed = parse_path(fixture(test_file, name), format)
    return parsed.format, [figures(run) for run in parsed.runs], len(parsed.warnings)


def refused(test_file: str, name: str, format: str | None = None) -> str:
    """The error a fixture is refused with, without the file's path."""
    path = fixture(test_file, name)
    with pytest.raises(FormatError) as error:
        parse_path(path, format)
    return str(error.value).removeprefix(f"{path}: ")
