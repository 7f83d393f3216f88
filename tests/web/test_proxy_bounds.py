"""The capture proxy against a hostile upstream: an answer longer than what is recorded
reaches the client whole while the record is cut and says so, and a small gzip answer
that inflates to far more than the limit is never inflated past it."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.upstream import Upstream, serving
from tests.web.test_doors import _raw
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


def _echoing_401() -> Any:
    """An upstream that refuses the key, saying it back (as real APIs' errors do)."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        body = json.dumps({"error": {"message": f"invalid x-api-key {headers['x-api-key']}"}})
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body.encode()})

    return app


def test_an_upstream_that_says_the_key_back_is_recorded_without_it(alice, through):
    url = through(_echoing_401())
    key = create_token(alice, "proxy")[1]
    answer = httpx.post(f"{url}/proxy/anthropic/v1/messages", json=BODY, headers=_headers(key))
    assert answer.status_code == 401 and PROVIDER_KEY in answer.text  # the client sees it
    (call,) = recorded(1)
    assert PROVIDER_KEY not in call.error and "[redacted]" in call.error


@pytest.mark.parametrize(
    "path, said",
    [
        ("/proxy/anthropic/v1/../../admin", b"climb out"),
        ("/proxy/anthropic/v1/%2e%2e/%2e%2e/admin", b"climb out"),
        ("/proxy/anthropic/v1/messages%0d%0aX-Injected:%201", b"control characters"),
    ],
)
def test_a_path_that_leaves_the_provider_or_breaks_the_request_is_refused(
    alice, through, path, said
):
    upstream = Upstream()
    url = through(upstream)
    key = create_token(alice, "proxy")[1]
    head = f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nX-Contextsim-Key: {key}\nContent-Length: 2\n"
    status, answer, _ = _raw(url, head, (b"{}",))
    assert status == 400 and said in answer
    assert upstream.seen == []


def test_cookies_and_forwarding_headers_stay_here_and_a_foreign_host_is_refused(alice, through):
    upstream = Upstream()
    url = through(upstream)
    key = create_token(alice, "proxy")[1]
    extra = {"cookie": "sessionid=abc", "x-forwarded-for": "10.0.0.1", "forwarded": "for=10.0.0.1"}
    answer = httpx.post(
        f"{url}/proxy/anthropic/v1/messages", json=BODY, headers=_headers(key, **extra)
    )
    assert answer.status_code == 200
    sent = upstream.seen[0].headers
    assert not {"cookie", "x-forwarded-for", "forwarded"} & set(sent)
    assert sent["x-api-key"] == PROVIDER_KEY  # the provider's own key goes on
    foreign = (
        "POST /proxy/anthropic/v1/messages HTTP/1.1\nHost: evil.example\n"
        f"X-Contextsim-Key: {key}\nContent-Length: 2\n"
    )
    status, said, _ = _raw(url, foreign, (b"{}",))
    assert status == 400 and b"Host not allowed" in said and len(upstream.seen) == 1


def test_bad_keys_at_the_proxy_are_limited_as_at_the_api(through, settings):
    settings.RATE_BAD_API_KEYS = "5/m"
    url = through(Upstream())
    codes = [
        httpx.post(
            f"{url}/proxy/anthropic/v1/messages", json=BODY, headers={"x-contextsim-key": f"bad{i}"}
        ).status_code
        for i in range(7)
    ]
    assert codes[:5] == [401] * 5 and codes[-1] == 429


def test_a_key_in_the_query_string_is_not_written_to_the_servers_log(alice, through, caplog):
    import logging

    from django.conf import settings as django_settings
    from django.utils.log import configure_logging

    # The server's own logging (the test runner's replaces it), at its own levels; the
    # test runner's put back afterwards.
    root = logging.getLogger()
    quieted = {n: logging.getLogger(n).level for n in ("httpx", "httpcore")}
    before = (root.level, list(root.handlers))
    configure_logging(django_settings.LOGGING_CONFIG, django_settings.LOGGING)
    root.addHandler(caplog.handler)  # the configuration took it away
    caplog.handler.setLevel(logging.DEBUG)  # what the loggers let through is captured
    try:
        _post_with_a_key_in_the_query(alice, through, caplog)
    finally:
        root.setLevel(before[0])
        root.handlers[:] = before[1]
        for name, level in quieted.items():
            logging.getLogger(name).setLevel(level)


def _post_with_a_key_in_the_query(alice, through, caplog):  # type: ignore[no-untyped-def]
    import logging

    url = through(Upstream())
    key = create_token(alice, "proxy")[1]
    secret = "AIzaSyD-query-secret-0123456789"
    answer = httpx.post(
        f"{url}/proxy/anthropic/v1/messages?key={secret}", json=BODY, headers=_headers(key)
    )
    assert answer.status_code == 200
    recorded(1)
    logging.getLogger("webapp.probe").info("the log is captured")
    logged = [r.getMessage() for r in caplog.records]
    assert "the log is captured" in logged  # an INFO line of the server would be seen
    assert not [m for m in logged if secret in m]
