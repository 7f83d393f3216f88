"""The streaming API's appends (`POST /api/runs/<id>/messages/`) served by Django's
synchronous handler, in threads of their own that keep their database connection.

Why: an agent streaming its run sends one small append per message, and Django's ASGI
handler costs more than the append itself. It moves each request between the event loop
and a new thread four times (the start signal, the middleware that cannot run async,
the view, the end signal) and opens a new database connection for it (ASGI requests
cannot keep one: CONN_MAX_AGE is 0 for them). On this project's 2-core machine that
was ~5 ms of a 7-8 ms append. Here the request runs through the same middleware and
view in one hop to a lane thread, whose connection stays open between appends and is
replaced when an error left it unusable (Django's own health check, as for a WSGI
server with persistent connections).

SQLite takes one writer at a time, so it gets one lane thread; a server database gets
several (appends to different runs go on side by side under their row locks).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.http import HttpResponseBase
from django.urls import set_script_prefix

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

PATH = re.compile(r"/api/runs/[^/]+/messages/")
_in_lane = threading.local()
_lane: list[ThreadPoolExecutor] = []  # the pool, once made
_lane_lock = threading.Lock()
_opened: dict[int, BaseDatabaseWrapper] = {}  # the lane threads' connections, by id


def serves(scope: Scope) -> bool:
    """Whether the request is an append, which the lane serves."""
    return (
        scope["type"] == "http"
        and scope["method"] == "POST"
        and PATH.fullmatch(scope["path"]) is not None
    )


def threads() -> int:
    """Lane threads: 1 on SQLite (one writer at a time), else 4."""
    return 1 if connections["default"].vendor == "sqlite" else 4


def _pool() -> ThreadPoolExecutor:
    with _lane_lock:
        if not _lane:
            _lane.append(ThreadPoolExecutor(threads(), thread_name_prefix="append-lane"))
        return _lane[0]


def _keep_open(sender: object, connection: BaseDatabaseWrapper, **kwargs: object) -> None:
    """A connection opened in a lane thread lives until it is found unusable: checked
    before each append's first query (Django's health check: a server database that
    restarted or dropped it costs no failed append), and closed at the end of an append
    that left it broken (close_old_connections)."""
    if getattr(_in_lane, "active", False):
        connection.close_at = None
        connection.health_check_enabled = True  # type: ignore[attr-defined]
        with _lane_lock:
            _opened[id(connection)] = connection


connection_created.connect(_keep_open, dispatch_uid="append-lane-keep-open")


class LaneHandler(ASGIHandler):
    """Django's ASGI handler with its synchronous middleware chain, run in a lane
    thread from the request's start to its end."""

    def __init__(self) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # type: ignore[override]
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        loop = asyncio.get_running_loop()
        response = await loop.run_in_executor(_pool(), self._respond, scope, body_file)
        await self.send_response(response, send)  # type: ignore[arg-type]

    def _respond(self, scope: Scope, body_file: Any) -> HttpResponseBase:
        """The whole request, as a WSGI server runs it: the start signal, the
        middleware and the view, the end signal (response.close)."""
        _in_lane.active = True
        try:
            set_script_prefix(get_script_prefix(scope))
            signals.request_started.send(sender=self.__class__, scope=scope)
            request, error = self.create_request(scope, body_file)
            response: HttpResponseBase | None = error
            if request is not None:
                response = self.get_response(request)
            # The append view answers JSON, never a stream: closed before it is sent.
            assert response is not None and not response.streaming
            response._handler_class = self.__class__  # type: ignore[attr-defined]
            response.close()  # the end signal, here: it checks this thread's connection
            return response
        finally:
            body_file.close()


def stop() -> None:
    """End the lane threads and close their connections (tests; a server's end with
    its process). The next append starts them again."""
    with _lane_lock:
        pool = _lane.pop() if _lane else None
    if pool is not None:
        pool.shutdown(wait=True)
    with _lane_lock:
        opened = list(_opened.values())
        _opened.clear()
    for connection in opened:
        # Their threads are gone: closed from here, as Django's live server does.
        connection.inc_thread_sharing()
        try:
            connection.close()
        finally:
            connection.dec_thread_sharing()


app = LaneHandler()
