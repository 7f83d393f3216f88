"""python manage.py watch [--path FOLDER]... : follow the agents' log folders.

Without `--path` (or CONTEXTSIM_WATCH), the agents' own folders: Claude Code's
`~/.claude/projects`, Codex's `~/.codex/sessions`, Gemini CLI's `~/.gemini/tmp` (see
contextsim.ingest.agent_folders). Every session there is imported once, what grows is
followed live, and a file that cannot be read is named with its error and skipped.
With `--to URL --key KEY` the runs go to that server instead (another machine's
dashboard: contextsim.cli.send_history), labelled with this machine's name.

After the first pass the folders are followed by the system's file notifications
(watchfiles: inotify here, FSEvents on macOS; polling where there are none), so a line
an agent writes is read within a fraction of a second and only the files that changed
are looked at; every `--interval` seconds a whole pass catches what a notification
missed (a folder on a network drive).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import watchfiles
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextsim.cli import send_history
from contextsim.ingest.agent_folders import Folder, folders_to_watch
from webapp.ingest.watch.services import do_watch_pass
from webapp.management.owners import command_owner
from webapp.models import Run

DEBOUNCE_MS = 300
"""The longest a change waits for the writes after it before it is read (ms)."""


class Command(BaseCommand):
    help = "Follow the agents' log folders (or those given) and keep their runs in step."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--path",
            action="append",
            default=[],
            help="a folder to follow (repeatable; 'agents' for the agents' own folders)",
        )
        parser.add_argument("--owner", default="", help="username (default: the local user)")
        parser.add_argument(
            "--interval",
            type=float,
            default=30.0,
            help="seconds between whole passes (changes are read as they are notified)",
        )
        parser.add_argument("--once", action="store_true", help="one pass, then exit")
        parser.add_argument(
            "--to", default="", help="send to this contextsim server instead (its URL)"
        )
        parser.add_argument("--key", default="", help="with --to: an API key of that server")
        parser.add_argument("--machine", default="", help="with --to: this machine's name")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["to"]:  # nothing is stored here: contextsim.cli.send_history
            code = send_history.watch(argparse.Namespace(**options))
            if code:
                raise CommandError("cannot watch: see above")
            return
        try:
            folders = folders_to_watch(options["path"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if not folders:
            raise CommandError(
                "no agent folder here (~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp): "
                "give one with --path"
            )
        owner = command_owner(options["owner"])
        for folder in folders:
            self.stdout.write(f"watching {folder.path} ({folder.agent or 'logs'})")
        known: dict[str, Run] = {}
        self._pass(owner, folders, known, None, first=True)
        if options["once"]:
            return
        roots = [f.path for f in folders]
        timeout = max(int(options["interval"] * 1000), 50)
        # A batch of changes is read at most DEBOUNCE_MS after its first, as soon as
        # the writes pause for 50 ms; a timeout yields an empty batch: a whole pass.
        for batch in watchfiles.watch(
            *roots,
            debounce=DEBOUNCE_MS,
            step=50,
            rust_timeout=timeout,
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            changed = {Path(path) for _, path in batch}
            self._pass(owner, folders, known, changed or None)

    def _pass(
        self,
        owner: User,
        folders: list[Folder],
        known: dict[str, Run],
        only: set[Path] | None,
        first: bool = False,
    ) -> None:
        done = do_watch_pass(owner, folders, known, self._progress if first else None, only)
        for path, error in done.errors:
            self.stderr.write(f"{path}: {error}")
        for run, count in done.changed_runs:
            self.stdout.write(
                f"{run.title}: {count} message(s) in, {run.message_count} in all "
                f"/runs/{run.public_id}/"
            )
        if first:
            self.stdout.write(
                f"{done.files} file(s): {done.read} read, {done.unchanged} unchanged, "
                f"{len(done.errors)} could not be read"
            )

    def _progress(self, n: int, total: int, path: Path) -> None:
        self.stdout.write(f"[{n}/{total}] {path.name}")
