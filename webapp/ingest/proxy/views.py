"""The capture proxy: `/proxy/anthropic/...` and `/proxy/openai/...` forward every
request unchanged to the provider and return its answer unchanged, streamed as it
arrives; model calls (Anthropic Messages, OpenAI Chat Completions and Responses) are
recorded afterwards as requests of live runs (webapp.ingest.proxy.services).

A plain ASGI application, not a Django view: a stream may stay open for minutes, and
the proxy must add no more than a few milliseconds, so it runs on the event loop with
an async HTTP client; the database work (who the caller is, the recording) runs in
threads, the recording after the client has its whole answer.

Who calls: a contextsim API key in `X-Contextsim-Key` or the path
(`/proxy/k/<key>/anthropic/...`), else the local user in single-user local mode
(webapp.access.callers); too many bad keys from one address are refused for a while,
as at the API. Headers carrying the provider's key (`x-api-key`, `authorization`) go
upstream and nowhere else, and what is recorded has them (and a key in the query) taken
out; `X-Contextsim-*` headers, the client's cookies and what a proxy in front of this
server says about the client (`X-Forwarded-*`, `Forwarded`, `Via`) go nowhere. A path
that climbs out of the provider's (`..`) or holds control characters is refused.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import time
import zlib
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl

import httpx
from django.conf import settings
from django.db import close_old_connections
from django.http import HttpRequest
from django.http.request import split_domain_port, validate_host
from django_ratelimit.core import is_ratelimited

from contextsim.ingest import sse
from contextsim.ingest.captures import session_marker
from contextsim.systems.gemini_api.format import streamed_response
from webapp.access.services.tokens import caller
from webapp.ingest.proxy.services import Capture, record

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

logger = logging.getLogger(__name__)
PREFIX = "/proxy/"
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        # The browser's and the front proxy's, not the provider's business.
        "cookie",
        "x-forwarded-for",
        "x-forwarded-host",
        "x-forwarded-proto",
        "x-forwarded-port",
        "forwarded",
        "via",
        "x-real-ip",
    }
)
SECRET_HEADERS = ("x-api-key", "authorization", "api-key", "x-goog-api-key")
SECRET_PARAMS = frozenset({"key", "api_key", "api-key", "apikey", "access_token", "token"})
OURS = ("x-contextsim-",)
NOT_PARAMS = frozenset(
    {"messages", "system", "tools", "input", "instructions", "contents", "systemInstruction"}
)
KEY_SECONDS = 10.0
"""How long a key's owner is remembered: a revoked key stops working within this."""
_lookups = ThreadPoolExecutor(4, thread_name_prefix="proxy-auth")
_writer = ThreadPoolExecutor(1, thread_name_prefix="proxy-record")
_owners: dict[tuple[str, bool], tuple[Any, float]] = {}
_clients: dict[int, httpx.AsyncClient] = {}


@dataclass(frozen=True, slots=True)
class Route:
    """A proxied request: the provider, the upstream URL, the key given in the path,
    and the endpoint recorded ('' for a request passed through unrecorded)."""

    provider: str
    url: str
    key: str
    endpoint: str
    session: str = ""
    """The session named in the path (`/proxy/s/<session>/...`), "" for none."""


class BadPath(ValueError):
    """A proxy path that cannot be forwarded; the message says why."""


def route(path: str, query: bytes, method: str) -> Route | None:
    """Where a `/proxy/...` request goes, or None for a path that names no provider.
    Raises BadPath for one with control characters or a `.`/`..` segment (which would
    leave the provider's base path)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path + query.decode("latin-1")):
        raise BadPath("the path holds control characters")
    if any(part in (".", "..") for part in path.split("/")):
        raise BadPath("the path may not climb out of the provider's ('.' or '..')")
    rest = path[len(PREFIX) :]
    key = session = ""
    if rest.startswith("k/"):
        key, _, rest = rest[2:].partition("/")
    if rest.startswith("s/"):  # a session named where an agent can only set a base URL
        session, _, rest = rest[2:].partition("/")
    provider, _, tail = rest.partition("/")
    upstreams = {
        "anthropic": settings.UPSTREAM_ANTHROPIC,
        "openai": settings.UPSTREAM_OPENAI,
        "gemini": settings.UPSTREAM_GEMINI,
    }
    if provider not in upstreams:
        return None
    url = upstreams[provider].rstrip("/") + "/" + tail
    if query:
        url += "?" + query.decode("latin-1")
    return Route(provider, url, key, _endpoint(provider, tail, method), session[:200])


def _endpoint(provider: str, tail: str, method: str) -> str:
    tail = tail.rstrip("/")
    if method != "POST":
        return ""
    if provider == "anthropic" and tail.endswith("messages"):
        return "messages"
    if provider == "openai" and tail.endswith("chat/completions"):
        return "chat.completions"
    if provider == "openai" and tail.endswith("responses"):
        return "responses"
    if provider == "gemini" and tail.endswith(":generateContent"):
        return "generateContent"
    if provider == "gemini" and tail.endswith(":streamGenerateContent"):
        return "streamGenerateContent"
    return ""


def gemini_model(url: str) -> str:
    """The model a Gemini API URL names (`.../models/<model>:generateContent`)."""
    path = url.split("?", 1)[0]
    return path.rsplit("/models/", 1)[-1].split(":", 1)[0] if "/models/" in path else ""


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """The ASGI application of every `/proxy/` path."""
    try:
        target = route(scope["path"], scope.get("query_string", b""), scope["method"])
    except BadPath as exc:
        await _refuse(send, 400, "invalid_request_error", f"contextsim proxy: {exc}")
        return
    if target is None:
        await _refuse(
            send,
            404,
            "not_found_error",
            "contextsim proxy: use /proxy/anthropic/ or /proxy/openai/",
        )
        return
    headers = _headers(scope)
    if not _allowed_host(headers.get("host", "")):
        await _refuse(send, 400, "invalid_request_error", "contextsim proxy: Host not allowed")
        return
    address = (scope.get("client") or ("", 0))[0]
    if await _limited(address, increment=False):
        await _refuse(
            send,
            429,
            "rate_limit_error",
            "contextsim proxy: too many bad API keys from your address: wait a minute",
        )
        return
    owner = await _owner(target.key or headers.get("x-contextsim-key", ""), scope, headers)
    if owner is None:
        await _limited(address, increment=True)
        await _refuse(
            send,
            401,
            "authentication_error",
            "contextsim proxy: send a contextsim API key in X-Contextsim-Key or the path "
            "(/proxy/k/<key>/...), or serve contextsim in single-user local mode",
        )
        return
    body = await _body(receive)
    await _forward(scope, receive, send, target, headers, body, owner)


def _secrets(headers: dict[str, str], query: bytes) -> list[str]:
    """The provider's keys the client sent (in its headers and its query string), which
    nothing recorded may hold: an upstream's error often says the key back."""
    found = []
    for name in SECRET_HEADERS:
        value = headers.get(name, "").strip()
        scheme, _, rest = value.partition(" ")
        found.append(rest.strip() if scheme.lower() == "bearer" else value)
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=False):
        if name.lower() in SECRET_PARAMS:
            found.append(value)
    return sorted({s for s in found if len(s) >= 8}, key=len, reverse=True)


def _redacted(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    return text


def _allowed_host(host: str) -> bool:
    """Whether the Host header is one the server answers to (ALLOWED_HOSTS, as Django
    checks it for the pages)."""
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    name, _ = split_domain_port(host)
    return bool(name) and validate_host(name, allowed)


async def _limited(address: str, increment: bool) -> bool:
    """Whether the address is over the bad-key limit (the API's: RATE_BAD_API_KEYS),
    counting one more bad key when `increment`."""

    def check() -> bool:
        request = HttpRequest()
        request.META["REMOTE_ADDR"] = address
        rate = settings.RATE_BAD_API_KEYS
        return bool(
            is_ratelimited(request, group="api-bad-key", key="ip", rate=rate, increment=increment)
        )

    return await asyncio.get_running_loop().run_in_executor(_lookups, check)


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


async def _owner(key: str, scope: Scope, headers: dict[str, str]) -> Any:
    host = headers.get("host", "")
    address = (scope.get("client") or ("", 0))[0]
    local = not key
    cached = _owners.get((key or host + "|" + address, local))
    now = time.monotonic()
    if cached is not None and cached[1] > now:
        return cached[0]

    def look() -> Any:
        close_old_connections()
        return caller(key, host, address, headers)

    owner = await asyncio.get_running_loop().run_in_executor(_lookups, look)
    if owner is not None:
        _owners[(key or host + "|" + address, local)] = (owner, now + KEY_SECONDS)
    return owner


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _client() -> httpx.AsyncClient:
    """One pooled client per event loop (tests run several)."""
    loop = id(asyncio.get_running_loop())
    client = _clients.get(loop)
    if client is None:
        timeout = httpx.Timeout(
            connect=10.0, read=settings.UPSTREAM_READ_TIMEOUT, write=60.0, pool=30.0
        )
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
        client = _clients[loop] = httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False)
    return client


async def _forward(
    scope: Scope,
    receive: Receive,
    send: Send,
    target: Route,
    headers: dict[str, str],
    body: bytes,
    owner: Any,
) -> None:
    sent = {k: v for k, v in headers.items() if k not in HOP_BY_HOP and not k.startswith(OURS)}
    sent.pop("content-length", None)
    sent.setdefault("accept-encoding", "identity")  # else the client would add its own
    started = time.time()
    kept = _Kept(settings.MAX_PROXY_RECORD_BYTES) if target.endpoint else None
    status, first, error, answer_headers = 0, None, "", {}
    try:
        request = _client().build_request(scope["method"], target.url, headers=sent, content=body)
        upstream = await _client().send(request, stream=True)
    except httpx.HTTPError as exc:
        status = 504 if isinstance(exc, httpx.TimeoutException) else 502
        error = f"upstream unreachable: {type(exc).__name__}: {exc}"
        await _refuse(send, status, "api_error", f"contextsim proxy: {error}")
        status = 0
    else:
        status = upstream.status_code
        answer_headers = {k.lower(): v for k, v in upstream.headers.items()}
        relayed = await _relay(receive, send, upstream, kept)
        first, error = relayed.first, relayed.error
    if kept is None:
        return
    done = time.time()
    if kept.cut:
        error = (error + "; " if error else "") + kept.said()
    secrets = _secrets(headers, scope.get("query_string", b""))
    capture = _capture(
        target, headers, body, status, answer_headers, kept.data(), started, first, done, error
    )
    if capture is not None and secrets:
        capture = replace(capture, error=_redacted(capture.error, secrets))
    if capture is not None:
        await asyncio.get_running_loop().run_in_executor(_writer, _record, owner, capture)


class _Kept:
    """What is recorded of an answer: its bytes up to `limit`, then nothing more (the
    client still gets them all)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.size = 0
        self.cut = False

    def add(self, chunk: bytes) -> None:
        if self.cut:
            return
        room = self.limit - self.size
        if len(chunk) > room:
            chunk, self.cut = chunk[:room], True
        self.chunks.append(chunk)
        self.size += len(chunk)

    def data(self) -> bytes:
        return b"".join(self.chunks)

    def said(self) -> str:
        return (
            f"the answer was over {self.limit:,} bytes: recorded up to there "
            "(CONTEXTSIM_MAX_PROXY_RECORD_BYTES); the client got all of it"
        )


@dataclass(slots=True)
class _Answer:
    """What came of relaying an answer: when its first byte came, what went wrong."""

    first: float | None = None
    error: str = ""


async def _relay(
    receive: Receive, send: Send, upstream: httpx.Response, kept: _Kept | None
) -> _Answer:
    """Pass the upstream's answer on as it arrives, until it ends or the client goes
    away (then the upstream connection is closed at once: a model left streaming to
    nobody would go on costing tokens)."""
    answer = _Answer()
    passing = asyncio.create_task(_pass_on(send, upstream, kept, answer))
    gone = asyncio.create_task(_disconnected(receive))
    try:
        await asyncio.wait({passing, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (passing, gone):
            task.cancel()
        await asyncio.gather(passing, gone, return_exceptions=True)
        await upstream.aclose()
    if passing.cancelled():  # only ever stopped by the client leaving
        answer.error = "client disconnected before the answer ended"
    return answer


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _pass_on(
    send: Send, upstream: httpx.Response, kept: _Kept | None, answer: _Answer
) -> None:
    out = [
        (k.encode("latin-1"), v.encode("latin-1"))
        for k, v in upstream.headers.multi_items()
        if k.lower() not in HOP_BY_HOP
    ]
    try:
        await send({"type": "http.response.start", "status": upstream.status_code, "headers": out})
        async for chunk in upstream.aiter_raw():
            answer.first = answer.first or time.time()
            if kept is not None:
                kept.add(chunk)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except httpx.HTTPError as exc:
        answer.error = f"upstream failed mid-answer: {type(exc).__name__}: {exc}"
    except OSError as exc:
        answer.error = f"client disconnected: {exc}"


async def _refuse(send: Send, status: int, kind: str, message: str) -> None:
    """An error of the proxy's own, in the shape both providers' SDKs read."""
    body = json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _capture(
    target: Route,
    headers: dict[str, str],
    body: bytes,
    status: int,
    answer_headers: dict[str, str],
    raw: bytes,
    started: float,
    first: float | None,
    done: float,
    error: str,
) -> Capture | None:
    """The call to record, or None when its request is no model call's JSON body."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if target.provider == "gemini":  # its body names no model: its URL does
        data = {**data, "model": gemini_model(target.url)}
    limit = settings.MAX_PROXY_RECORD_BYTES
    text, unread = _decoded(raw, answer_headers.get("content-encoding", ""), limit)
    streamed = "text/event-stream" in answer_headers.get("content-type", "")
    answer: dict[str, Any] | None = None
    failure = unread
    if not unread and 200 <= status < 300:
        answer, failure = _answer(target, text, streamed)
    if status >= 300 and not error:
        error = f"upstream answered {status}: {text[:4000]}"
    return Capture(
        provider=target.provider,
        endpoint=target.endpoint,
        body=data,
        answer=answer,
        status=status,
        started=started,
        first_byte=first,
        done=done,
        session=(
            target.session or headers.get("x-contextsim-session") or session_marker(data, headers)
        ),
        streamed=streamed,
        error="; ".join(e for e in (error, failure) if e),
        params={k: v for k, v in data.items() if k not in NOT_PARAMS},
    )


def _decoded(raw: bytes, encoding: str, limit: int) -> tuple[str, str]:
    """The answer's text, inflated to at most `limit` bytes (a small answer may inflate
    to gigabytes), and why it could not be read whole ("" when it could)."""
    encoding = encoding.strip().lower()
    try:
        if encoding in ("gzip", "x-gzip"):
            raw = _inflated(zlib.decompressobj(16 + zlib.MAX_WBITS), raw, limit)
        elif encoding == "deflate":
            raw = _inflated(zlib.decompressobj(), raw, limit)
        elif encoding == "br":
            import brotli  # type: ignore[import-not-found]  # httpx asks for br only when it is installed

            raw = brotli.Decompressor().process(raw, output_buffer_limit=limit + 1)
        elif encoding == "zstd":
            import zstandard

            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)) as reader:
                raw = reader.read(limit + 1)
    except Exception as exc:  # a body we cannot read is recorded as unread, never fatal
        return "", f"the answer is encoded as {encoding!r}, unreadable here: {exc}"
    if len(raw) > limit:
        setting = "CONTEXTSIM_MAX_PROXY_RECORD_BYTES"
        return "", f"the answer inflated past {limit:,} bytes ({setting}): not recorded"
    return raw.decode("utf-8", errors="replace"), ""


def _inflated(inflater: Any, raw: bytes, limit: int) -> bytes:
    """At most limit + 1 bytes of `raw` inflated (one more says it goes on)."""
    return bytes(inflater.decompress(raw, limit + 1))


def _answer(target: Route, text: str, streamed: bool) -> tuple[dict[str, Any] | None, str]:
    """The response body (a stream put back together) and why it could not be read."""
    try:
        if not streamed:
            data = json.loads(text)
            return (data, "") if isinstance(data, dict) else (None, "the answer is not an object")
        if target.endpoint == "messages":
            return sse.anthropic_message(text), ""
        if target.endpoint == "chat.completions":
            return sse.chat_completion(text), ""
        if target.provider == "gemini":
            return streamed_response(text), ""
        return sse.response(text), ""
    except ValueError as exc:
        return None, f"answer not read: {exc}"


def _record(owner: Any, capture: Capture) -> None:
    close_old_connections()
    try:
        record(owner, capture)
    except Exception:
        # The client has its answer; a failure to record must not become its failure.
        logger.exception("recording a captured call failed")
