"""How `serve` runs uvicorn: who may speak for the client's address, and how long a
client may take to say what it wants.

- **Forwarded addresses.** uvicorn takes `X-Forwarded-For` from a loopback peer as the
  client's address by default: anyone on the machine (or a page that gets a request
  through) could then rotate it and start every per-address limit afresh. It is trusted
  only when the operator says a proxy is in front (CONTEXTSIM_BEHIND_PROXY), from the
  addresses they name (CONTEXTSIM_FORWARDED_ALLOW_IPS, default 127.0.0.1).
- **Slow clients.** uvicorn times out an idle kept-alive connection, but not one that
  opens and says nothing, or sends its request head a byte at a time: enough of them hold
  every connection the server has. `TimedHttp` is uvicorn's own httptools protocol (a
  protocol class is a documented uvicorn setting) with one more timer: a request head
  must arrive whole within HEAD_SECONDS of the connection, or of its first byte. A slow
  body is the doors' (webapp.runtime.doors).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import uvicorn
from django.conf import settings
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEAD_SECONDS = float(os.environ.get("CONTEXTSIM_HEAD_SECONDS", 10))
GRACE_SECONDS = 1
"""How long a stopping server waits for requests in flight: a model call streaming for
minutes is cut, its client retries (SIGTERM means go now)."""


class TimedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a connection whose request head does not
    arrive whole within HEAD_SECONDS."""

    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(HEAD_SECONDS, self._late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _late(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            self.transport.close()


def uvicorn_config(host: str, port: int, app: Any = "webapp.asgi:application") -> uvicorn.Config:
    """The configuration `serve` runs uvicorn with."""
    behind = settings.BEHIND_PROXY
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=TimedHttp,
        lifespan="off",
        log_level="warning",
        server_header=False,
        proxy_headers=behind,
        forwarded_allow_ips=os.environ.get("CONTEXTSIM_FORWARDED_ALLOW_IPS", "127.0.0.1"),
        timeout_keep_alive=5,
        timeout_graceful_shutdown=GRACE_SECONDS,
    )
