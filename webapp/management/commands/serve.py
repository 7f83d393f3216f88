"""python manage.py serve : the whole local app in one command.

Applies migrations, collects static files, loads the demo runs (once), starts a Celery
worker on the configured broker (a file-system broker by default: no server needed),
and serves the dashboard and the capture proxy with uvicorn, an ASGI server: a proxied
model call may stream for minutes, and on the event loop it holds no thread the
dashboard needs (webapp.asgi).
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from webapp.access.callers import LOOPBACK_NAMES, host_name
from webapp.store.actions.demo import do_load_demo

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
WORKER_GRACE = 1.0
"""Seconds a stopping worker is given before it is killed (an idle Celery worker on the
file-system broker takes about six to stop on its own)."""


class Command(BaseCommand):
    help = "Migrate, load the demo, start a worker and serve the dashboard."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="do not start a worker")
        parser.add_argument("--no-demo", action="store_true", help="do not load the demo runs")
        parser.add_argument(
            "--watch",
            nargs="*",
            metavar="FOLDER",
            help="also follow the agents' log folders (or these): see `manage.py watch`",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        if not options["no_demo"]:
            self.stdout.write("Loading the demo runs (first start only)...")
            created = do_load_demo()
            self.stdout.write(f"  {created} demo runs created" if created else "  present")
        public = public_hosts(settings.ALLOWED_HOSTS)
        if not settings.LOCAL_USER and options["host"] in LOOPBACK and not public:
            # One person on their own machine: sign plainly local visitors in as the
            # local user (webapp.access.local_mode). Served on a network address, or with a
            # public host allowed, people sign in instead.
            settings.LOCAL_USER = "local"
        self.stdout.write(_mode_line(public))
        worker = None if options["no_worker"] else Worker(self.stdout.write)
        watcher = None if options["watch"] is None else _watcher(options["watch"])
        url = f"http://{options['host']}:{options['port']}/"
        # Everything loaded so far lives as long as the server: keep it out of the
        # collector's full scans, which otherwise show up as latency spikes.
        gc.collect()
        gc.freeze()
        self.stdout.write(self.style.SUCCESS(f"contextsim is serving on {url}"))
        # Stopped by SIGTERM (kill, a service manager), leave the way Ctrl-C does, so
        # the worker is stopped too rather than left running on its own.
        signal.signal(signal.SIGTERM, _exit)
        import uvicorn

        from webapp.runtime.server import uvicorn_config

        server = uvicorn.Server(uvicorn_config(options["host"], options["port"]))
        try:
            server.run()
        finally:
            if worker is not None:
                worker.stop()
            if watcher is not None:
                _stop(watcher)


class Worker:
    """The Celery worker `serve` runs beside the web server, with celery beat inside it
    (the job reaper, webapp.jobs.services). Started again if it dies (killed for its
    memory, say): the jobs it held are taken up again once their leases run out."""

    def __init__(self, say: Callable[[str], object]) -> None:
        self.say = say
        self.stopping = threading.Event()
        self.process = self._start()
        self.keeper = threading.Thread(target=self._keep, name="worker-keeper", daemon=True)
        self.keeper.start()

    def _start(self) -> subprocess.Popen[bytes]:
        command = worker_command(settings.CELERY_BEAT_SCHEDULE_FILENAME)
        self.say(f"Starting a Celery worker on {settings.CELERY_BROKER_URL.split('://')[0]}://")
        # A process group of its own: stopping it reaches its pool and its beat too.
        return subprocess.Popen(
            command,
            env={**os.environ, "CONTEXTSIM_LOCAL_USER": settings.LOCAL_USER},
            start_new_session=True,
        )

    def _keep(self) -> None:
        while not self.stopping.wait(1.0):
            code = self.process.poll()
            if code is not None and not self.stopping.is_set():
                self.say(f"The worker stopped (exit code {code}); starting it again")
                # Not in a tight loop if it cannot start at all.
                if self.stopping.wait(2.0):
                    return
                self.process = self._start()

    def stop(self) -> None:
        """Stop the worker within WORKER_GRACE seconds: asked first, then killed. A job
        it was running is taken up again when its lease runs out (webapp.jobs), so a
        server told to stop (SIGTERM, Ctrl-C) does not wait for one."""
        self.stopping.set()
        self.keeper.join(timeout=5)
        self._signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=WORKER_GRACE)
        # Whatever of its group is left (its pool's processes outlive it for a moment).
        self._signal(signal.SIGKILL)
        self.process.wait()

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):  # gone already
            os.killpg(self.process.pid, signum)


def _watcher(folders: list[str]) -> subprocess.Popen[bytes]:
    """`manage.py watch` beside the server, as the local user, in a group of its own."""
    command = [sys.executable, str(settings.BASE_DIR / "manage.py"), "watch"]
    for folder in folders:
        command += ["--path", folder]
    return subprocess.Popen(
        command,
        env={**os.environ, "CONTEXTSIM_LOCAL_USER": settings.LOCAL_USER},
        start_new_session=True,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=WORKER_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def worker_command(schedule: str, *options: str) -> list[str]:
    """The worker `serve` runs: two processes, with celery beat inside (the job reaper)
    keeping its schedule in the file `schedule`; `options` are added (a log file)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "webapp",
        "worker",
        "--beat",
        f"--schedule={schedule}",
        "--concurrency=2",
        "--without-gossip",
        "--without-mingle",
        *(options or ("--loglevel=WARNING",)),
    ]


def public_hosts(allowed: list[str]) -> list[str]:
    """The allowed hosts that are not this machine's loopback names."""
    return [h for h in allowed if host_name(h.lstrip(".")) not in LOOPBACK_NAMES]


def _mode_line(public: list[str]) -> str:
    """Which sign-in mode the server is in, said at start."""
    if settings.LOCAL_USER_EXPLICIT:
        return (
            f"Single-user mode (CONTEXTSIM_LOCAL_USER): every visitor is {settings.LOCAL_USER!r}."
        )
    if settings.LOCAL_USER:
        return "Single-user mode: requests from this machine are the local user; none else."
    why = f"ALLOWED_HOSTS names {', '.join(public)}" if public else "not bound to loopback"
    return f"Sign-in mode ({why}): people sign in with their accounts."


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(0)
