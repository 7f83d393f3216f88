"""The doors, attacked as a hostile client would, through the real server (uvicorn and
the ASGI application): a size over the limit is refused before the body is sent, a
chunked body is cut off at the limit, a large body waits for its key, and a browser's
write from another site is refused while agents keep writing."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.upstream import serving
from webapp.access.services.tokens import create_token
from webapp.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(settings) -> Iterator[str]:  # type: ignore[no-untyped-def]
    from webapp.asgi import application

    settings.MAX_UPLOAD_BYTES = 1_000_000
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 200_000
    settings.MAX_PROXY_REQUEST_BYTES = 300_000
    with serving(application) as url:
        yield url


def _raw(
    url: str, head: str, pieces: tuple[bytes, ...] = (), wait: float = 5.0
) -> tuple[int, bytes, float]:
    """Send `head`, then the body's `pieces` one at a time until the server answers,
    on a socket; the status, the answer and the seconds its first byte took to come."""
    parts = urlsplit(url)
    started = time.monotonic()
    took = wait
    answer = b""
    with socket.create_connection((parts.hostname, parts.port), timeout=wait) as conn:
        conn.sendall(head.replace("\n", "\r\n").encode() + b"\r\n")
        for piece in pieces:
            if select.select([conn], [], [], 0.05)[0]:
                break  # answered before the whole body was sent
            try:
                conn.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
        try:
            while chunk := conn.recv(65536):
                if not answer:
                    took = time.monotonic() - started
                    conn.settimeout(0.5)  # the rest of the answer follows at once
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    status = int(answer.split(b" ", 2)[1]) if answer else 0
    return status, answer, took


def _head(method: str, path: str, **headers: str) -> str:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "path, setting",
    [
        ("/upload/", "CONTEXTSIM_MAX_UPLOAD_BYTES"),
        ("/api/runs/", "CONTEXTSIM_MAX_REQUEST_BYTES"),
        ("/v1/traces", "CONTEXTSIM_MAX_REQUEST_BYTES"),
        ("/proxy/anthropic/v1/messages", "CONTEXTSIM_MAX_PROXY_REQUEST_BYTES"),
        ("/sweeps/new/", "CONTEXTSIM_MAX_REQUEST_BYTES"),
    ],
)
def test_a_size_over_the_limit_is_refused_before_the_body_is_sent(server, path, setting):
    head = _head(
        "POST", path, Content_Length=str(700 * 1024 * 1024), Content_Type="application/json"
    )
    status, answer, took = _raw(server, head)  # not one byte of the 700 MiB is sent
    assert status == 413 and took < 2
    assert setting.encode() in answer


def test_a_chunked_body_is_cut_off_at_the_limit_and_nothing_is_saved(server, alice):
    key = create_token(alice, "agent")[1]
    head = _head(
        "POST",
        "/api/runs/",
        Transfer_Encoding="chunked",
        Content_Type="application/json",
        Authorization=f"Bearer {key}",
    )
    piece = b"x" * 50_000
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    status, answer, _ = _raw(server, head, (chunk,) * 10 + (b"0\r\n\r\n",))
    assert status == 413 and b"over 200,000 bytes" in answer
    assert Run.objects.count() == 0


def test_a_large_body_is_not_read_until_its_caller_is_known(server, settings):
    # Under the limit, but large: without a key the door answers before the body comes.
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = settings.MAX_UPLOAD_BYTES = 20_000_000
    head = _head("POST", "/api/runs/", Content_Length="15000000", Content_Type="application/json")
    status, answer, took = _raw(server, head)
    assert status == 401 and took < 2, answer


def test_a_browser_write_from_another_site_is_refused_and_an_agents_is_not(server, alice):
    key = create_token(alice, "agent")[1]
    body = json.dumps({"contextsim": 1, "runs": [{"title": "t", "messages": []}]})
    auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    with httpx.Client(base_url=server) as client:
        for extra in (
            {"Origin": "http://evil.example"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site"},
        ):
            refused = client.post("/api/runs/", content=body, headers={**auth, **extra})
            assert refused.status_code == 403 and "another site" in refused.json()["error"]
        plain = client.post(
            "/api/runs/", content=body, headers={**auth, "Content-Type": "text/plain"}
        )
        assert plain.status_code == 415
        assert Run.objects.count() == 0
        own = client.post("/api/runs/", content=body, headers={**auth, "Origin": server})
        agent = client.post("/api/runs/", content=body, headers=auth)
        assert own.status_code == agent.status_code == 201
    assert Run.objects.count() == 2


def test_static_files_cannot_be_framed_or_run_anything(settings):
    from django.test import Client

    settings.WHITENOISE_USE_FINDERS = settings.WHITENOISE_AUTOREFRESH = True
    response = Client().get("/static/js/dashboard.js")
    assert response.status_code == 200
    assert response["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert response["X-Content-Type-Options"] == "nosniff"
