"""`python -m contextsim watch --to URL [--key KEY]`: follow this machine's agent folders
(contextsim.ingest.agent_folders) and send their runs to a contextsim server through its
API, so one dashboard holds the sessions of several machines, each run labelled with the
machine that sent it. Nothing is stored here.

Each run of each log file is a stream on the server, named by the file's path and the
run's session id (or position) and by this machine (`POST /api/runs/?stream=&machine=`):
the first time, the server creates it from its header and first messages; after that,
the server answers with how many messages it holds (and its last one's content hash)
and this sender appends from there (`POST /api/runs/<id>/messages/` with `start`,
`if_revision` and an `Idempotency-Key`). A retry, a restart or a second pass sends
nothing twice; a message rewritten at the end of a file (a response still being
written) replaces the server's. A revision the server moved past (409) makes the sender
ask again. Messages go CHUNK_BYTES at a time, under the server's request limit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from contextsim.counting.estimators import content_key
from contextsim.ingest.agent_folders import Folder, folders_to_watch
from contextsim.ingest.base import FormatError
from contextsim.ingest.detect import parse_path
from contextsim.model import Message, Run
from contextsim.systems.native.format import message_to_dict, run_to_dict

CHUNK_BYTES = 4_000_000
"""Bytes of messages per request at most (the server's default limit is larger)."""
TIMEOUT = 60.0
"""Seconds a request may take."""


class SendError(Exception):
    """A request the server refused or could not answer; the message says which and why."""


@dataclass(slots=True)
class _Stream:
    """What the server holds of one run: its id and revision, and the content hashes
    of the messages it holds as this sender knows them."""

    public_id: str
    revision: int
    hashes: list[str]
    header: str = ""


@dataclass(slots=True)
class Sent:
    """What one pass sent."""

    files: int = 0
    read: int = 0
    unchanged: int = 0
    messages: int = 0
    runs: list[str] = field(default_factory=list)
    errors: list[tuple[Path, str]] = field(default_factory=list)


Post = Callable[[str, bytes, dict[str, str]], tuple[int, dict[str, Any]]]
"""Sends a POST (path and query, body, headers); returns the status and the JSON answer."""


def http_post(server: str, key: str) -> Post:
    """A Post to `server` (its base URL) with the API `key` ("" in local mode)."""

    def post(path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        sent = {"Content-Type": "application/json", **headers}
        if key:
            sent["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(
            f"{server.rstrip('/')}{path}", data=body, headers=sent, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
                return answer.status, json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                said = json.loads(exc.read() or b"{}")
            except ValueError:
                said = {}
            return exc.code, said if isinstance(said, dict) else {}
        except (urllib.error.URLError, OSError) as exc:
            raise SendError(f"{server}: cannot reach it ({exc})") from None

    return post


class Sender:
    """Sends the runs of log files to a server as `machine`'s streams (see the module).
    One per watcher: it remembers what it sent between passes."""

    def __init__(self, post: Post, machine: str) -> None:
        self._post = post
        self.machine = machine
        self._streams: dict[str, _Stream] = {}
        self._files: dict[Path, tuple[int, float]] = {}

    def send_pass(self, folders: Iterable[Folder], only: set[Path] | None = None) -> Sent:
        """Send what changed in the folders' log files since this sender last read them
        (`only`: of those files alone). A file that cannot be read or sent is listed
        with why, and the others go on."""
        found: dict[Path, None] = {}
        for folder in folders:
            for path in folder.files():
                if only is None or path in only:
                    found[path] = None
        files = sorted(found, key=lambda p: ("subagents" in p.parts, str(p)))
        done = Sent(files=len(files))
        for path in files:
            try:
                stat = path.stat()
            except OSError as exc:
                done.errors.append((path, str(exc)))
                continue
            if self._files.get(path) == (stat.st_size, stat.st_mtime):
                done.unchanged += 1
                continue
            try:
                runs = parse_path(str(path)).runs
                for position, run in enumerate(runs):
                    stream = f"{path.resolve()}#{run.session_id or position}"
                    done.messages += self.send_run(stream, run)
                    done.runs.append(self._streams[stream].public_id)
            except (FormatError, OSError, UnicodeDecodeError, SendError) as exc:
                done.errors.append((path, str(exc)))
                continue
            self._files[path] = (stat.st_size, stat.st_mtime)
            done.read += 1
        return done

    def send_run(self, stream: str, run: Run) -> int:
        """Bring the server's run of `stream` in step with `run`; returns how many
        messages were sent. Raises SendError when the server refuses."""
        hashes = [content_key(m) for m in run.messages]
        known = self._streams.get(stream)
        header = _header(run)
        created = 0
        if known is None or known.header != header:
            known, created = self._open(stream, run, hashes, header)
        start = _first_difference(known.hashes, hashes)
        if start == len(hashes) == len(known.hashes):
            return created
        try:
            self._append(stream, known, run.messages, hashes, start)
        except _Stale:
            known, created = self._open(stream, run, hashes, header)
            start = _first_difference(known.hashes, hashes)
            self._append(stream, known, run.messages, hashes, start)
        return created + len(hashes) - start

    def _open(self, stream: str, run: Run, hashes: list[str], header: str) -> tuple[_Stream, int]:
        """The server's run of `stream` (created with the first chunk of messages), and
        how many messages creating it sent (0 when it was there)."""
        first = _chunk(run.messages, 0)
        document = {"contextsim": 1, "runs": [run_to_dict(replace(run, messages=first))]}
        query = urllib.parse.urlencode({"stream": stream, "machine": self.machine})
        status, said = self._post(
            f"/api/runs/?{query}", json.dumps(document).encode(), {"Accept": "application/json"}
        )
        if status not in (200, 201):
            raise SendError(f"the server refused the run ({status}): {said.get('error', said)}")
        count = int(said["messages"])
        if status == 201:
            held = hashes[:count]
        else:
            # The server holds `count` messages; the sender trusts all but the last to be
            # the file's (logs grow at their end) and checks the last by its hash.
            held = hashes[: max(count - 1, 0)]
            if count and count <= len(hashes) and said.get("last_hash") == hashes[count - 1]:
                held = hashes[:count]
            held += ["?"] * (count - len(held))
        known = _Stream(str(said["id"]), int(said["revision"]), held, header)
        self._streams[stream] = known
        return known, count if status == 201 else 0

    def _append(
        self,
        stream: str,
        known: _Stream,
        messages: Sequence[Message],
        hashes: list[str],
        start: int,
    ) -> None:
        """Send messages[start:] (replacing what the server holds from there on)."""
        at = start
        while True:
            chunk = _chunk(messages, at)
            body = {
                "messages": [message_to_dict(m) for m in chunk],
                "start": at,
                "if_revision": known.revision,
            }
            raw = json.dumps(body).encode()
            receipt = hashlib.sha256(
                f"{self.machine}\0{stream}\0{known.revision}\0{at}".encode()
                + "".join(hashes[at : at + len(chunk)]).encode()
            ).hexdigest()
            status, said = self._post(
                f"/api/runs/{known.public_id}/messages/", raw, {"Idempotency-Key": receipt}
            )
            if status == 409:
                raise _Stale
            if status != 200:
                raise SendError(
                    f"the server refused messages from {at} ({status}): {said.get('error', said)}"
                )
            known.revision = int(said["revision"])
            known.hashes = [*known.hashes[:at], *hashes[at : at + len(chunk)]]
            at += len(chunk)
            if at >= len(messages):
                return


class _Stale(Exception):
    """The server's run changed since this sender last saw it (409)."""


def _header(run: Run) -> str:
    """What the server keeps of a run besides its messages, as one comparable text."""
    data = run_to_dict(replace(run, messages=()))
    return json.dumps(data, sort_keys=True)


def _first_difference(held: list[str], hashes: list[str]) -> int:
    for i, (a, b) in enumerate(zip(held, hashes, strict=False)):
        if a != b:
            return i
    return min(len(held), len(hashes))


def _chunk(messages: Sequence[Message], start: int) -> tuple[Message, ...]:
    """Messages from `start` on, at most CHUNK_BYTES of them (at least one)."""
    out: list[Message] = []
    size = 0
    for message in messages[start:]:
        size += len(json.dumps(message_to_dict(message)))
        if out and size > CHUNK_BYTES:
            break
        out.append(message)
    return tuple(out)


def add_to(sub: Any) -> None:
    """Add the `watch` command to the CLI's subparsers."""
    cmd = sub.add_parser(
        "watch",
        help="send this machine's agent sessions to a contextsim server as they grow",
    )
    cmd.add_argument("--to", required=True, help="the server's URL (https://...)")
    cmd.add_argument("--key", default="", help="an API key of the server (not in local mode)")
    cmd.add_argument(
        "--path",
        action="append",
        default=[],
        help="a folder to follow (repeatable; default: the agents' own folders)",
    )
    cmd.add_argument("--machine", default="", help="this machine's name (default: hostname)")
    cmd.add_argument("--interval", type=float, default=30.0, help="seconds between whole passes")
    cmd.add_argument("--once", action="store_true", help="one pass, then exit")
    cmd.set_defaults(handler=watch)


def watch(args: argparse.Namespace) -> int:
    """The `watch --to` command: 0 once stopped, 2 when it cannot start."""
    try:
        folders = folders_to_watch(args.path)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not folders:
        print("error: no agent folder here: give one with --path", file=sys.stderr)
        return 2
    sender = Sender(http_post(args.to, args.key), args.machine or socket.gethostname())
    for folder in folders:
        print(f"sending {folder.path} ({folder.agent or 'logs'}) to {args.to}")
    _report(sender.send_pass(folders), first=True)
    if args.once:
        return 0
    import watchfiles  # only a watcher that stays needs it

    timeout = max(int(args.interval * 1000), 50)
    for batch in watchfiles.watch(
        *[f.path for f in folders],
        debounce=300,
        step=50,
        rust_timeout=timeout,
        yield_on_timeout=True,
        raise_interrupt=False,
    ):
        _report(sender.send_pass(folders, {Path(p) for _, p in batch} or None))
    return 0


def _report(sent: Sent, first: bool = False) -> None:
    for path, error in sent.errors:
        print(f"{path}: {error}", file=sys.stderr)
    if first or sent.messages:
        print(
            f"{sent.files} file(s): {sent.read} read, {sent.unchanged} unchanged, "
            f"{len(sent.errors)} could not be sent; {sent.messages} message(s) sent",
            flush=True,
        )
