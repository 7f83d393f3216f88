"""Fixtures shared by every test folder."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


def corpus_root() -> Path:
    """Where the real logs written by other projects live (never copied into the repo)."""
    return Path(os.environ.get("CONTEXTSIM_CORPUS", ROOT.parent / "shared" / "corpus"))


def corpus_files(folder: str, pattern: str) -> list[Any]:
    """The corpus files of `folder` matching `pattern`, as parameters of a test; one
    skipped parameter, with the reason, where the corpus or the folder is absent."""
    found = sorted((corpus_root() / folder).glob(pattern))
    if found:
        return found
    reason = f"no {pattern} in {corpus_root() / folder} (the shared corpus is not here)"
    return [pytest.param(None, marks=pytest.mark.skip(reason=reason))]


def log_entries(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL log, a line at a time, lines that are not one left
    out (the tests read the raw files to know what a log says)."""
    with path.open("rb") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                yield entry


@pytest.fixture
def corpus() -> Path:
    """The corpus folder; the test is skipped, with the reason, where it is absent."""
    root = corpus_root()
    if not root.is_dir():
        pytest.skip(f"real-log corpus not found at {root} (set CONTEXTSIM_CORPUS)")
    return root


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """On SQLite, the test database is a file, as the product's is: servers that tests
    run in threads (uvicorn with the capture proxy) write from connections of their
    own, which an in-memory database shared between connections refuses with "table is
    locked". Each test session gets its own file."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        database.setdefault("TEST", {})["NAME"] = str(
            tmp_path_factory.mktemp("database") / "test.sqlite3"
        )


def off_the_main_thread(work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`work(*args, **kwargs)` in a thread of its own. Playwright's sync API keeps an event loop
    running on the main thread for the browser tests' session, so code that starts its
    own loop (asyncio.run, an SDK's run_sync) must not run there."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(work, *args, **kwargs).result()


def npm_package(name: str, version: str, inside: str) -> Path:
    """`inside` (a path within node_modules/) of npm's `name@version`, installed into
    .cache/<name>/ the first time. The test is skipped with the reason where npm is
    missing, except in CI, where that fails it."""
    import shutil
    import subprocess

    root = ROOT / ".cache" / name
    found = root / "node_modules" / inside
    command = ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(root)]
    if not found.exists() and shutil.which("npm"):
        subprocess.run(
            [*command, f"{name}@{version}"],
            check=False,
            capture_output=True,
            timeout=300,
        )
    if not found.exists():
        message = f"{name} not found at {found} (npm install {name}@{version})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found
