"""The server as `serve` runs it (uvicorn with webapp.runtime.server's configuration),
against slow and lying clients: a connection that says nothing or dribbles its request
head is closed, a body that stops coming is refused, and a forwarded address from a
loopback client does not start the per-address limits afresh."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from tests.upstream import free_port
from tests.web.test_doors import _raw
from webapp.runtime import doors
from webapp.runtime import server as served

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def base(settings, monkeypatch) -> Iterator[str]:  # type: ignore[no-untyped-def]
    from webapp.asgi import application

    monkeypatch.setattr(served, "HEAD_SECONDS", 0.5)
    monkeypatch.setattr(doors, "BODY_SECONDS", 0.5)
    settings.RATE_BAD_API_KEYS = "5/m"
    port = free_port()
    server = uvicorn.Server(served.uvicorn_config("127.0.0.1", port, app=application))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def _closed_within(base: str, send: bytes, dribble: bool = False) -> tuple[float, bytes]:
    """Open a connection, send `send` (a byte every 0.1 s when `dribble`); the seconds
    until the server closed it, and what it said."""
    port = int(base.rsplit(":", 1)[1])
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        said = b""
        pieces = [send[i : i + 1] for i in range(len(send))] if dribble else [send]
        try:
            for piece in pieces:
                conn.sendall(piece)
                time.sleep(0.1 if dribble else 0)
        except (ConnectionResetError, BrokenPipeError):
            pass  # closed on us: what it said is still to be read
        try:
            while chunk := conn.recv(1024):
                said += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    return time.monotonic() - started, said


def test_a_connection_that_says_nothing_is_closed(base):
    took, said = _closed_within(base, b"")
    assert took < 2 and b"408" in said


def test_a_request_head_sent_a_byte_at_a_time_is_closed(base):
    head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 40
    took, said = _closed_within(base, head, dribble=True)
    assert took < 3 and b"408" in said


def test_a_body_that_stops_coming_is_refused(base):
    head = "POST /api/runs/ HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\n"
    head += "Authorization: Bearer whatever\nContent-Length: 1000\n"
    status, answer, took = _raw(base, head, (b"{",))  # then nothing
    assert status == 408 and b"stopped coming" in answer and took < 2


def test_a_forwarded_address_does_not_reset_the_limits(base):
    codes = [
        httpx.post(
            f"{base}/api/runs/",
            json={},
            headers={"Authorization": f"Bearer bad{i}", "X-Forwarded-For": f"10.0.0.{i}"},
        ).status_code
        for i in range(7)
    ]
    assert codes[:5] == [401] * 5 and codes[-1] == 429
