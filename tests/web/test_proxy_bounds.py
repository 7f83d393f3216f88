"""The capture proxy against a hostile upstream: an answer longer than what is recorded
reaches the client whole while the record is cut and says so, and a small gzip answer
that inflates to far more than the limit is never inflated past it."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.upstream import Upstream, serving
from tests.web.test_proxy import PROVIDER_KEY, recorded
from webapp.access.services.tokens import create_token

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 4_000
BODY = {
    "model": "claude-haiku-4-5",
    "max_tokens": 50,
    "messages": [{"role": "user", "content": "hi"}],
}


def _bomb(size: int) -> Any:
    """An upstream whose answer is `size` bytes of JSON-looking text, gzipped."""
    packed = gzip.compress(b'{"id": "msg_1", "content": "' + b"0" * size + b'"}')

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"application/json"), (b"content-encoding", b"gzip")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": packed})

    return app, packed


@pytest.fixture
def through(settings) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """Serve the app with a small record limit before `upstream` (a callable ASGI app);
    yields a function that starts one and returns the proxy's URL."""
    from webapp.asgi import application

    settings.MAX_PROXY_RECORD_BYTES = LIMIT
    stack: list[Any] = []

    def start(upstream: Any) -> str:
        fake = serving(upstream)
        settings.UPSTREAM_ANTHROPIC = fake.__enter__()
        server = serving(application)
        url = server.__enter__()
        stack.extend([server, fake])
        return url

    yield start
    for context in stack:
        context.__exit__(None, None, None)


def _headers(key: str, **extra: str) -> dict[str, str]:
    return {
        "x-api-key": PROVIDER_KEY,
        "anthropic-version": "2023-06-01",
        "x-contextsim-key": key,
        **extra,
    }


def test_a_long_answer_reaches_the_client_whole_and_its_record_is_cut(alice, through):
    upstream = Upstream()
    url = through(upstream)
    key = create_token(alice, "proxy")[1]
    headers = _headers(key, **{"x-fake-words": "3000"})
    with httpx.stream(
        "POST", f"{url}/proxy/anthropic/v1/messages", json={**BODY, "stream": True}, headers=headers
    ) as answer:
        got = b"".join(answer.iter_raw())
    assert len(got) > LIMIT * 3 and got == upstream.seen[0].sent  # every byte, as sent
    (call,) = recorded(1)
    assert f"over {LIMIT:,} bytes: recorded up to there" in call.error


def test_a_small_gzip_answer_that_inflates_hugely_is_not_inflated_past_the_limit(
    alice, through, settings
):
    app, packed = _bomb(50_000_000)
    url = through(app)
    settings.MAX_PROXY_RECORD_BYTES = 100_000
    key = create_token(alice, "proxy")[1]
    headers = _headers(key, **{"accept-encoding": "gzip"})
    answer = httpx.post(
        f"{url}/proxy/anthropic/v1/messages",
        json=BODY,
        headers=headers,
        timeout=30,
    )
    assert answer.status_code == 200 and len(packed) < 100_000  # all of it is recorded
    assert answer.content == gzip.decompress(packed)  # the client's own httpx inflates it
    (call,) = recorded(1)
    assert "inflated past 100,000 bytes" in call.error and "recorded up to" not in call.error
