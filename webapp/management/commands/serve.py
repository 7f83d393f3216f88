"""python manage.py serve : the whole local app in one command.

Applies migrations, collects static files, loads the demo runs (once), starts a Celery
worker on the configured broker (a file-system broker by default: no server needed),
and serves the dashboard with waitress, a production-grade WSGI server.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from webapp.services.demo import load_demo

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class Command(BaseCommand):
    help = "Migrate, load the demo, start a worker and serve the dashboard."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="do not start a worker")
        parser.add_argument("--no-demo", action="store_true", help="do not load the demo runs")
        parser.add_argument("--threads", type=int, default=8)

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        if not options["no_demo"]:
            self.stdout.write("Loading the demo runs (first start only)...")
            created = load_demo()
            self.stdout.write(f"  {created} demo runs created" if created else "  present")
        if not settings.LOCAL_USER and options["host"] in LOOPBACK:
            # One person on their own machine: sign every visitor in as the local user.
            # Served on a network address, people sign in instead.
            settings.LOCAL_USER = "local"
        worker = None if options["no_worker"] else self._start_worker()
        url = f"http://{options['host']}:{options['port']}/"
        # Everything loaded so far lives as long as the server: keep it out of the
        # collector's full scans, which otherwise show up as latency spikes.
        gc.collect()
        gc.freeze()
        self.stdout.write(self.style.SUCCESS(f"contextsim is serving on {url}"))
        # Stopped by SIGTERM (kill, a service manager), leave the way Ctrl-C does, so
        # the worker is stopped too rather than left running on its own.
        signal.signal(signal.SIGTERM, _exit)
        from waitress import create_server

        from webapp.wsgi import application

        server = create_server(
            application,
            host=options["host"],
            port=options["port"],
            threads=options["threads"],
            ident="contextsim",
        )
        try:
            server.run()
        finally:
            server.close()  # free the port at once, not after the worker has stopped
            if worker is not None:
                worker.terminate()
                worker.wait(timeout=20)

    def _start_worker(self) -> subprocess.Popen[bytes]:
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "webapp",
            "worker",
            "--loglevel=WARNING",
            "--concurrency=2",
            "--without-gossip",
            "--without-mingle",
        ]
        self.stdout.write(
            f"Starting a Celery worker on {settings.CELERY_BROKER_URL.split('://')[0]}://"
        )
        return subprocess.Popen(
            command, env={**os.environ, "CONTEXTSIM_LOCAL_USER": settings.LOCAL_USER}
        )


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(0)
