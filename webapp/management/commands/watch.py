"""python manage.py watch [--path FOLDER]... : follow the agents' log folders.

Without `--path` (or CONTEXTSIM_WATCH), the agents' own folders: Claude Code's
`~/.claude/projects`, Codex's `~/.codex/sessions`, Gemini CLI's `~/.gemini/tmp` (see
webapp.ingest.watch.folders). Every session there is imported once, what grows is
followed live, and a file that cannot be read is named with its error and skipped.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.ingest.watch.folders import folders_to_watch
from webapp.ingest.watch.services import do_watch_pass
from webapp.management.owners import command_owner
from webapp.models import Run


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
        parser.add_argument("--interval", type=float, default=1.0, help="seconds between looks")
        parser.add_argument("--once", action="store_true", help="one pass, then exit")

    def handle(self, *args: Any, **options: Any) -> None:
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
        first = True
        while True:
            done = do_watch_pass(owner, folders, known, self._progress if first else None)
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
                first = False
            if options["once"]:
                return
            time.sleep(options["interval"])

    def _progress(self, n: int, total: int, path: Path) -> None:
        self.stdout.write(f"[{n}/{total}] {path.name}")
