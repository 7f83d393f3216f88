"""python manage.py tail_run PATH : follow a log file that an agent is still writing
(a Claude Code session, a Codex rollout, a native JSONL file) and keep its runs in the
dashboard in step with it, so their open dashboards grow as the agent works."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextsim.ingest.base import FormatError
from contextsim.ingest.detect import IMPORTERS
from webapp.management.owners import command_owner
from webapp.models import Run
from webapp.store.actions.appends import do_sync_file


class Command(BaseCommand):
    help = "Follow a growing log file and stream its runs into the dashboard."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        parser.add_argument("--format", choices=sorted(IMPORTERS))
        parser.add_argument("--owner", default="", help="username (default: the local user)")
        parser.add_argument("--interval", type=float, default=1.0, help="seconds between looks")
        parser.add_argument("--once", action="store_true", help="bring it in step once, exit")
        parser.add_argument(
            "--idle-exit", type=float, default=0, help="exit after this many seconds unchanged"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        owner = command_owner(options["owner"])
        known: dict[str, Run] = {}
        seen: tuple[float, int] | None = None
        quiet_since = time.monotonic()
        while True:
            stat = path.stat()
            if (stat.st_mtime, stat.st_size) != seen:
                seen = (stat.st_mtime, stat.st_size)
                quiet_since = time.monotonic()
                self._sync(owner, path, known, options["format"], options["once"])
            if options["once"]:
                return
            if options["idle_exit"] and time.monotonic() - quiet_since > options["idle_exit"]:
                self.stderr.write(f"{path}: unchanged for {options['idle_exit']:g} s, stopping")
                return
            time.sleep(options["interval"])

    def _sync(
        self, owner: Any, path: Path, known: dict[str, Run], format: str | None, once: bool
    ) -> None:
        try:
            changed = do_sync_file(owner, path, known, format)
        except FormatError as exc:
            if once:
                raise CommandError(str(exc)) from None
            # The agent may be half-way through writing: try again at the next change.
            self.stderr.write(f"waiting: {exc}")
            return
        for run, count in changed:
            self.stdout.write(
                f"{run.title}: {count} message(s) in, {run.message_count} in all, "
                f"{run.request_count} requests /runs/{run.public_id}/"
            )
