"""Following folders of agent logs: every log file is brought in step with the owner's
runs (webapp.store.actions.appends.do_sync_file: a file read for the first time is
imported, one that grew is followed as `tail_run` follows it, a session is never stored
twice), and what each file was when read is kept (WatchedFile), so that a file unchanged
since is not read again, across restarts. A file that cannot be read is kept with its
error and the others go on.

A pass takes the sessions before their agents' files (a subagent joins its session's
collection either way) and the oldest first, so a first pass over a long history makes
runs browsable as it goes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import User

from contextsim.ingest.agent_folders import Folder
from contextsim.ingest.base import FormatError
from webapp.models import Run, WatchedFile
from webapp.store.actions.appends import do_sync_file

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class Pass:
    """What one pass over the folders did."""

    files: int = 0
    read: int = 0
    unchanged: int = 0
    changed_runs: list[tuple[Run, int]] = field(default_factory=list)
    errors: list[tuple[Path, str]] = field(default_factory=list)


Progress = Callable[[int, int, Path], None]
"""Told (files done, files in all, the file) after each file a pass reads."""


def candidates(folders: Iterable[Folder]) -> list[tuple[Path, str]]:
    """Every log file of the folders with its agent: sessions before their agents'
    files, the oldest first."""
    found: dict[Path, str] = {}
    for folder in folders:
        for path in folder.files():
            found.setdefault(path, folder.agent)

    def order(item: tuple[Path, str]) -> tuple[bool, float, str]:
        path = item[0]
        try:
            mtime = path.stat().st_mtime
        except OSError:
            mtime = 0.0
        return ("subagents" in path.parts, mtime, str(path))

    return sorted(found.items(), key=order)


def do_watch_pass(
    owner: User,
    folders: Iterable[Folder],
    known: dict[str, Run],
    progress: Progress | None = None,
    only: set[Path] | None = None,
) -> Pass:
    """Bring the owner's runs in step with every log file of `folders` that changed
    since it was last read (`known`: the runs of the files followed, kept between passes
    by the caller); `only`: of these files alone (those a notification named; a path
    that is not one of the folders' log files is ignored). Writes each file's state once
    it is read."""
    files = candidates(folders)
    if only is not None:
        files = [(path, agent) for path, agent in files if path in only]
    done = Pass(files=len(files))
    seen = {w.path: w for w in WatchedFile.objects.filter(owner=owner)}
    for n, (path, agent) in enumerate(files, 1):
        try:
            stat = path.stat()
        except OSError as exc:  # gone between listing and reading
            done.errors.append((path, str(exc)))
            continue
        state = seen.get(str(path))
        if state is not None and (state.size, state.mtime) == (stat.st_size, stat.st_mtime):
            done.unchanged += 1
            continue
        error, runs = _read(owner, path, known, done)
        WatchedFile.objects.update_or_create(
            owner=owner,
            path=str(path),
            defaults={
                "agent": agent,
                "size": stat.st_size,
                "mtime": stat.st_mtime,
                "runs": runs,
                "error": error[:5000],
            },
        )
        done.read += 1
        if progress is not None:
            progress(n, len(files), path)
    return done


def _read(owner: User, path: Path, known: dict[str, Run], done: Pass) -> tuple[str, int]:
    """Bring one file's runs in step; ("", its runs) or (why it could not be read, 0)."""
    try:
        changed = do_sync_file(owner, path, known)
    except (FormatError, OSError, UnicodeDecodeError) as exc:
        done.errors.append((path, str(exc)))
        return str(exc), 0
    except Exception as exc:  # one bad file never stops the others
        logger.exception("watching %s failed", path)
        done.errors.append((path, f"internal error: {exc}"))
        return f"internal error: {exc}", 0
    done.changed_runs += changed
    prefix = f"{path.resolve()}#"
    return "", sum(1 for key in known if key.startswith(prefix))
