"""``python -m contextsim run [--name NAME] [--server URL] [--key KEY] -- COMMAND...``:
run an agent with every model call it makes captured by contextsim's proxy.

The command runs in the foreground, its terminal untouched, and its exit code is this
command's. Only the child's environment changes: `ANTHROPIC_BASE_URL` and
`OPENAI_BASE_URL` and `GOOGLE_GEMINI_BASE_URL` point at the proxy
(`/proxy/[k/<key>/]s/<name>/anthropic`, `.../openai/v1`, `.../gemini`), which the
providers' SDKs and the agents built on them (Claude Code, Codex, Gemini CLI, an agent of
your own) read, and which name the session in the path. The
session's live dashboard is at `<server>/sessions/<name>/` (printed, or opened with
`--open`).

With no server given and none answering at the default address, `manage.py serve` is
started in the background (left running afterwards, to look at the session). This module
imports nothing of the web app: it starts it as a program.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
import webbrowser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

DEFAULT_SERVER = "http://127.0.0.1:8000"
START_SECONDS = 120.0
"""How long a server started here may take to answer (its first start migrates)."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class RunError(Exception):
    """What stops `run` before the command starts; the message says why."""


def add_to(sub: Any) -> None:
    """Add the `run` command to the CLI's subparsers."""
    cmd = sub.add_parser(
        "run",
        help="run an agent with its model calls captured (python -m contextsim run -- claude)",
    )
    cmd.add_argument("--name", default="", help="the session's name (default: made up)")
    cmd.add_argument("--server", default="", help=f"a contextsim server (default {DEFAULT_SERVER})")
    cmd.add_argument("--key", default="", help="a contextsim API key (not needed in local mode)")
    cmd.add_argument("--open", action="store_true", help="open the session's dashboard")
    cmd.add_argument(
        "agent_command",
        nargs=argparse.REMAINDER,
        metavar="COMMAND",
        help="-- then the agent's command",
    )
    cmd.set_defaults(handler=run)


def capture_env(server: str, name: str, key: str = "") -> dict[str, str]:
    """The environment variables that send a child's model calls through the proxy."""
    base = f"{server.rstrip('/')}/proxy/{f'k/{key}/' if key else ''}s/{name}"
    return {
        "ANTHROPIC_BASE_URL": f"{base}/anthropic",
        "OPENAI_BASE_URL": f"{base}/openai/v1",
        "GOOGLE_GEMINI_BASE_URL": f"{base}/gemini",
    }


def run(args: argparse.Namespace) -> int:
    given: list[str] = args.agent_command
    command = given[1:] if given[:1] == ["--"] else given
    try:
        if not command:
            raise RunError("give the agent's command after --, e.g. run -- claude")
        name = args.name or f"{Path(command[0]).name}-{secrets.token_hex(3)}"
        if not NAME.fullmatch(name):
            raise RunError(f"--name: {name!r}: letters, digits, '.', '_' and '-' only")
        server = (args.server or os.environ.get("CONTEXTSIM_SERVER") or DEFAULT_SERVER).rstrip("/")
        if not _answers(server):
            if args.server or os.environ.get("CONTEXTSIM_SERVER"):
                raise RunError(f"--server: nothing answers at {server}")
            _start_server(server)
    except RunError as exc:
        print(f"contextsim run: {exc}", file=sys.stderr)
        return 2
    link = f"{server}/sessions/{name}/"
    print(f"contextsim: capturing session {name}: {link}", file=sys.stderr)
    if args.open:
        webbrowser.open(link)
    env = {
        **os.environ,
        **capture_env(server, name, args.key or os.environ.get("CONTEXTSIM_KEY", "")),
    }
    try:
        return subprocess.call(command, env=env)
    except FileNotFoundError:
        print(f"contextsim run: {command[0]}: command not found", file=sys.stderr)
        return 127


def _answers(server: str) -> bool:
    try:
        with urllib.request.urlopen(f"{server}/", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True  # it answered, if not with a page
    except (OSError, ValueError):
        return False


def _start_server(server: str) -> None:
    """Start `manage.py serve` at the server's port, in the background, and wait for it."""
    parts = urlsplit(server)
    if parts.hostname not in ("127.0.0.1", "localhost") or parts.port is None:
        raise RunError(f"nothing answers at {server}, and only a local server can be started")
    manage = Path(__file__).resolve().parents[2] / "manage.py"
    if not manage.is_file():
        raise RunError(f"nothing answers at {server}; start a server (manage.py serve) first")
    log = Path(os.environ.get("CONTEXTSIM_DATA_DIR", manage.parent / "var")) / "serve.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"contextsim: starting a server at {server} (log: {log})", file=sys.stderr)
    with log.open("ab") as out:
        subprocess.Popen(
            [sys.executable, str(manage), "serve", "--no-demo", "--port", str(parts.port)],
            cwd=manage.parent,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # it outlives this command, to look at the session
        )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if _answers(server):
            return
        time.sleep(0.2)
    raise RunError(f"the server started at {server} did not answer (see {log})")
