"""Every door of the server bounded before its body is read, and the machine doors
closed to other sites.

Django's ASGI handler reads a request's whole body (spooled to a file) before any view
runs, so a view's own size check comes after the bytes have arrived: a 700 MiB body got
its 413 only once all of it was on disk. This wraps the whole application (the capture
proxy, the append lane and Django alike) and answers before the body is read:

- **Sizes.** Each door has a limit in bytes (`Door`): a `Content-Length` above it is
  refused at once with 413, and a body sent without one (chunked) is cut off with 413
  at the limit, the application seeing a disconnect. The limits are settings, named
  in every refusal.
- **Slow bodies.** A body whose next piece does not come within BODY_SECONDS is
  refused with 408 (a slow head is the server's: webapp.runtime.server).
- **Keys first.** A large body to a machine door (the API, the OTLP receiver, the
  proxy) is read only once its caller is known: without a key the door answers (its own
  401, with an empty body), which it does before reading anything.
- **Other sites.** A browser marks a request made by another site's page (`Origin`,
  `Sec-Fetch-Site: cross-site`); agents and SDKs send neither. Machine doors refuse
  such writes (a local-mode server signs in every caller from this machine, so a web
  page the person visits could otherwise write as them), and the API's writes must be
  JSON (a `text/plain` form post is what a page may send without asking).

No state is kept between requests.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import close_old_connections

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MULTIPART_SLACK = 1024 * 1024
"""Bytes an upload's multipart form adds around its file (boundaries, fields)."""
BODY_SECONDS = float(os.environ.get("CONTEXTSIM_BODY_SECONDS", 30))
"""The longest wait for the next piece of a request body."""
KEY_FIRST_BYTES = 1024 * 1024
"""A machine door's body up to this size is read as it comes (an append is small, and
answering it stays one hop); a larger one only once the caller is known."""
OTLP_PATHS = frozenset({"/v1/traces", "/v1/logs", "/otlp/v1/traces", "/otlp/v1/logs"})


@dataclass(frozen=True, slots=True)
class Door:
    """One kind of request: its `limit` in bytes, the environment variable that sets
    it, and whether agents and SDKs call it (a `machine` door) rather than people."""

    name: str
    limit: int
    setting: str
    machine: bool
    hint: str = ""
    """What to do instead, said with a refusal."""


def door_of(scope: Scope) -> Door:
    """The door a request comes in by, from its path."""
    path: str = scope.get("path", "")
    request = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if path.startswith("/proxy/"):
        limit = settings.MAX_PROXY_REQUEST_BYTES
        return Door("capture proxy", limit, "CONTEXTSIM_MAX_PROXY_REQUEST_BYTES", True)
    if path.startswith("/api/"):
        hint = "send fewer messages per request"
        return Door("API", request, "CONTEXTSIM_MAX_REQUEST_BYTES", True, hint)
    if path in OTLP_PATHS:
        hint = "send smaller batches"
        return Door("OTLP receiver", request, "CONTEXTSIM_MAX_REQUEST_BYTES", True, hint)
    if path == "/upload/":
        limit = settings.MAX_UPLOAD_BYTES + MULTIPART_SLACK
        hint = "split the log, or raise the limit"
        return Door("upload", limit, "CONTEXTSIM_MAX_UPLOAD_BYTES", False, hint)
    return Door("page", request, "CONTEXTSIM_MAX_REQUEST_BYTES", False)


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def other_site(scope: Scope, headers: dict[str, str]) -> bool:
    """Whether a browser says the request comes from another site's page: an `Origin`
    that is not this server's, or `Sec-Fetch-Site: cross-site` / `same-site`."""
    fetched = headers.get("sec-fetch-site", "")
    if fetched in ("cross-site", "same-site"):
        return True
    origin = headers.get("origin", "")
    if not origin:
        return False
    if origin == "null":  # a sandboxed page, a file, a data: URL
        return True
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    return origin.lower() not in {f"{scheme}://{headers.get('host', '').lower()}"}


def _json_type(headers: dict[str, str]) -> bool:
    kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


Caller = Callable[[str, str, str, dict[str, str]], object]
"""Who a machine door's caller is, from (key, host, client address, headers): None for
no one (webapp.access.services.tokens.caller)."""


def guarded(app: App, caller: Caller) -> App:
    """`app` behind the doors' checks (see the module); `caller` says who a machine
    door's caller is, for a large body read only once it is known."""

    async def guarded_app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        door = door_of(scope)
        headers = _headers(scope)
        writes = scope.get("method", "GET") in UNSAFE
        if door.machine and writes:
            if other_site(scope, headers):
                await refuse(send, 403, f"{door.name}: no writes from another site's page")
                return
            if door.name == "API" and not _json_type(headers):
                text = f"{door.name}: send the body as JSON (Content-Type: application/json)"
                await refuse(send, 415, text)
                return
        raw = headers.get("content-length")
        length = None
        if raw is not None:
            try:
                length = int(raw)
            except ValueError:
                await refuse(send, 400, f"Content-Length: expected a number of bytes, got {raw!r}")
                return
            if length > door.limit:
                await refuse(send, 413, _too_big(door))
                return
        sender = _Sender(send)
        large = length is None or length > KEY_FIRST_BYTES
        if door.machine and writes and large and not await _known(caller, scope, headers):
            # The door refuses an unknown caller before it reads anything: it gets no body.
            await app(scope, _nothing(), sender)
            return
        await app(scope, _bounded(door, receive, sender), sender)

    return guarded_app


def _too_big(door: Door) -> str:
    said = f"{door.name}: the body is over {door.limit:,} bytes (set by {door.setting})"
    return f"{said}: {door.hint}" if door.hint else said


class _Sender:
    """The application's `send`, silenced once the guard answered in its place."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False
        self.refused = False

    async def __call__(self, message: Message) -> None:
        if self.refused:
            return
        if message.get("type") == "http.response.start":
            self.started = True
        await self.send(message)

    async def refuse(self, status: int, text: str) -> None:
        if not self.started and not self.refused:
            self.refused = True
            await refuse(self.send, status, text)


def _bounded(door: Door, receive: Receive, sender: _Sender) -> Receive:
    """`receive`, counting the body: past the door's limit the guard answers 413 and
    the application sees the client go (it stops reading; what it answers is dropped)."""
    seen = 0
    ended = False

    async def bounded_receive() -> Message:
        nonlocal seen, ended
        if ended:  # only the client leaving is still to come: no deadline
            return await receive()
        try:
            message = await asyncio.wait_for(receive(), BODY_SECONDS)
        except TimeoutError:
            await sender.refuse(408, f"{door.name}: the body stopped coming ({BODY_SECONDS:g} s)")
            return {"type": "http.disconnect"}
        ended = message.get("type") != "http.request" or not message.get("more_body")
        if message.get("type") == "http.request":
            seen += len(message.get("body", b""))
            if seen > door.limit:
                await sender.refuse(413, _too_big(door))
                return {"type": "http.disconnect"}
        return message

    return bounded_receive


def _nothing() -> Receive:
    """A `receive` whose body is empty, and which then waits (Django listens for the
    client leaving while it answers: nothing more is to come)."""
    given = False

    async def receive() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # until the answer is sent and this is cancelled
        return {"type": "http.disconnect"}

    return receive


def _key(scope: Scope, headers: dict[str, str]) -> str:
    """The key a machine door's caller gives: a bearer token, the proxy's header, or the
    proxy path's `/proxy/k/<key>/`."""
    scheme, _, value = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    if headers.get("x-contextsim-key"):
        return headers["x-contextsim-key"].strip()
    parts = scope.get("path", "").split("/")
    return parts[3] if len(parts) > 3 and parts[1:3] == ["proxy", "k"] else ""


async def _known(caller: Caller, scope: Scope, headers: dict[str, str]) -> bool:
    """Whether a machine door's caller is someone (a valid key, or the local user)."""
    key = _key(scope, headers)
    address = (scope.get("client") or ("", 0))[0]

    def look() -> bool:
        close_old_connections()
        try:
            return caller(key, headers.get("host", ""), address, headers) is not None
        finally:
            close_old_connections()

    return await asyncio.to_thread(look)


async def refuse(send: Send, status: int, message: str) -> None:
    """Answer `status` with a JSON error naming what was wrong, and close."""
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
