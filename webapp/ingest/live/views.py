"""The HTTP API for live streaming, authenticated by an API token
(`Authorization: Bearer <key>`; none needed in single-user local mode, as for the
pages): list the runs the caller may see, create runs from a log body, append messages
to a run as an agent produces them, read a run's figures and requests. JSON in and out;
errors are `{"error": "..."}` naming what was wrong and where."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_ratelimit.core import is_ratelimited

from contextsim.ingest.base import FormatError, without_lone_surrogates
from contextsim.ingest.detect import parse_stream
from contextsim.systems.native.format import parse_message
from webapp.access.services.tokens import caller
from webapp.dashboard import state as viewstate
from webapp.estimators.reads import estimators_for
from webapp.ingest.live import reads as reads
from webapp.models import Message, Run
from webapp.runs.reads import visible_runs
from webapp.runtime import full_disk
from webapp.store.actions import appends as streaming

BODY = "request body"
logger = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _owner(request: HttpRequest) -> User:
    """The caller (webapp.access.callers.caller): the owner of the Bearer key, or, with no
    `Authorization` header, the local user in local mode. A header that is not a valid
    key is refused (401) even in local mode. After RATE_BAD_API_KEYS bad or missing keys
    from one address in a minute, every key from it is refused (429) until the minute
    is over: guessing is slow."""
    rate = settings.RATE_BAD_API_KEYS
    if is_ratelimited(request, group="api-bad-key", key="ip", rate=rate, increment=False):
        raise ApiError("too many bad API keys from your address: wait a minute", 429)
    given = request.headers.get("Authorization")
    scheme, _, key = (given or "").partition(" ")
    key = key.strip() if scheme.lower() == "bearer" else ""
    meta = request.META
    host, address = str(meta.get("HTTP_HOST", "")), str(meta.get("REMOTE_ADDR", ""))
    owner = caller(key, host, address, request.headers) if key or given is None else None
    if owner is None:
        if is_ratelimited(request, group="api-bad-key", key="ip", rate=rate, increment=True):
            raise ApiError("too many bad API keys from your address: wait a minute", 429)
        raise ApiError("missing or revoked API token: send 'Authorization: Bearer <key>'", 401)
    return owner


def _run_of(owner: User, public_id: str) -> Run:
    """The caller's run `public_id` (only its id read: the append reads the rest under
    its lock), or 404."""
    run = reads.own_run(owner, public_id)
    if run is None:
        raise ApiError(f"no run {public_id} of yours", 404)
    return run


def _json(request: HttpRequest) -> Any:
    """The body's JSON, a lone surrogate (half an emoji, which no database takes)
    replaced by U+FFFD wherever it is, as a file's are when it is read."""
    try:
        return without_lone_surrogates(json.loads(request.body))[0]
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(f"{BODY}: invalid JSON ({exc})") from None
    except (RecursionError, ValueError):
        raise ApiError(f"{BODY}: JSON nested too deeply or a number too long to read") from None


def _figures(request: HttpRequest, run: Run) -> dict[str, Any]:
    """A run as every answer gives it. `live`: a run made to grow (by the API, tail_run
    or a capture: Run.last_append is set), however long ago it last changed; `created`
    in ISO 8601."""
    return {
        "id": run.public_id,
        "title": run.title,
        "format": run.format,
        "model": run.model,
        "messages": run.message_count,
        "requests": run.request_count,
        "revision": run.revision,
        "live": run.last_append is not None,
        "machine": run.machine,
        "created": run.created.isoformat(),
        "url": request.build_absolute_uri(reverse("run", args=[run.public_id])),
    }


def _answer(request: HttpRequest, work: Any) -> JsonResponse:
    try:
        status, body = work()
    except ApiError as exc:
        response = JsonResponse({"error": str(exc)}, status=exc.status)
        if exc.status == 401:
            response["WWW-Authenticate"] = "Bearer"
        if exc.status == 429:
            response["Retry-After"] = str(settings.RATE_RETRY_AFTER)
        return response
    except RequestDataTooBig:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        message = f"{BODY}: over {limit:,} bytes; send fewer messages per request"
        return JsonResponse({"error": message}, status=413)
    except (FormatError, ValueError) as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    except Exception as exc:
        # Nothing was saved (each call is one transaction); the details go to the log.
        if full_disk.disk_full(exc):
            logger.error("disk full while answering %s: %s", request.path, exc)
            return JsonResponse({"error": full_disk.SAID}, status=507)
        logger.exception("API request %s failed", request.path)
        return JsonResponse({"error": "internal error (see the server log)"}, status=500)
    return JsonResponse(body, status=status)


@csrf_exempt
@require_http_methods(["GET", "POST"])
def runs(request: HttpRequest) -> HttpResponse:
    """`/api/runs/`: GET lists runs (list_runs), POST creates them (create_runs).

    Django routes by path alone, so one path's two methods meet here and part at once;
    each view keeps its own method decorator and contract, as if it had its own path."""
    return list_runs(request) if request.method == "GET" else create_runs(request)


LIMIT, MAX_LIMIT = 100, 1000
"""Runs per listed page by default, and at most (`?limit=`)."""


@require_GET
def list_runs(request: HttpRequest) -> HttpResponse:
    """The runs the caller may see (their own and the public ones, as the runs page
    lists them), newest first: `{"runs": [figures...], "next": URL of the next page or
    null}`. `?limit=` runs per page (default LIMIT, at most MAX_LIMIT), `?before=<id>`
    the runs older than that one (what `next` says), `?format=` only that format."""

    def work() -> tuple[int, dict[str, Any]]:
        owner = _owner(request)
        limit = _limit(request.GET.get("limit", ""))
        format = request.GET.get("format", "").strip()
        page = reads.runs_page(owner, limit, format, request.GET.get("before", "").strip())
        following = None
        if page.more:
            query = request.GET.copy()
            query["before"] = page.runs[-1].public_id
            following = request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
        return 200, {"runs": [_figures(request, r) for r in page.runs], "next": following}

    return _answer(request, work)


def _limit(raw: str) -> int:
    if raw == "":
        return LIMIT
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise ApiError(f"limit: expected a whole number from 1 to {MAX_LIMIT}, got {raw!r}")
    return int(raw)


@csrf_exempt
@require_POST
def create_runs(request: HttpRequest) -> HttpResponse:
    """Body: a log in any supported format (`?format=` to skip detection).

    With `?stream=<key>&machine=<name>` (a watcher on another machine: `watch --to`),
    the body holds one run and the answer is the run that follows that stream on that
    machine: created (201) the first time, else (200) only its title, model and
    compactions updated: the sender appends its messages from the answer's `messages`
    count (`last_hash`: its last message's content hash), so a retry changes nothing."""

    def work() -> tuple[int, dict[str, Any]]:
        owner = _owner(request)
        parsed = parse_stream(BODY, io.BytesIO(request.body), request.GET.get("format") or None)
        stream = request.GET.get("stream", "").strip()
        if stream:
            return _stream(request, owner, stream, parsed.runs)
        runs = streaming.do_create_live_runs(owner, parsed.runs)
        return 201, {"runs": [_figures(request, r) for r in runs], "warnings": parsed.warnings}

    return _answer(request, work)


def _stream(
    request: HttpRequest, owner: User, stream: str, runs: tuple[Any, ...]
) -> tuple[int, dict[str, Any]]:
    machine = request.GET.get("machine", "").strip()
    if not machine or len(machine) > 100:
        raise ApiError("machine: a stream needs the name of the machine sending it (<= 100)")
    if len(stream) > 400:
        raise ApiError("stream: at most 400 characters")
    if len(runs) != 1:
        raise ApiError(f"{BODY}: a stream's body holds one run, not {len(runs)}")
    run, created = streaming.do_open_stream(owner, stream, machine, runs[0])
    last = Message.objects.filter(run=run).order_by("-index").values_list("content_hash")[:1]
    body = {**_figures(request, run), "last_hash": next((h for (h,) in last), "")}
    return (201 if created else 200), body


@csrf_exempt
@require_POST
def append(request: HttpRequest, public_id: str) -> HttpResponse:
    """Body: `{"messages": [native message, ...], "start": optional position,
    "if_revision": the revision the client last saw}`; with `start`, stored messages
    from there on are replaced (a response rewritten), and `if_revision` is required: a
    stale one is refused (409) with the current revision. An `Idempotency-Key` header
    makes a retry safe: the same key gets the first answer and changes nothing
    (docs/format.md, "Streaming")."""

    def work() -> tuple[int, dict[str, Any]]:
        run = _run_of(_owner(request), public_id)
        data = _json(request)
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise ApiError(f'{BODY}: expected {{"messages": [...]}}')
        start, seen = _whole(data, "start"), _whole(data, "if_revision")
        if start is not None and seen is None:
            raise ApiError(f"{BODY}: $.start: a replacing append needs $.if_revision")
        key = request.headers.get("Idempotency-Key", "").strip()
        if len(key) > 200:
            raise ApiError("Idempotency-Key: at most 200 characters")
        messages = [
            parse_message(BODY, f"$.messages[{i}]", m) for i, m in enumerate(data["messages"])
        ]
        try:
            body = streaming.do_append(
                run, messages, start, key, lambda r: _figures(request, r), seen
            )
        except streaming.StaleAppend as exc:
            raise ApiError(f"{BODY}: $.if_revision: {exc}", 409) from None
        return 200, body

    return _answer(request, work)


def _whole(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise ApiError(f"{BODY}: $.{key}: expected a whole number, got {value!r}")
    return value


@require_GET
def run_figures(request: HttpRequest, public_id: str) -> HttpResponse:
    """A run the caller may see (their own or a public one): its figures, `estimator`
    (the one that counted: `?estimator=`, default the dashboard's; while a slow
    tokenizer's counts are still being made, its calibrated stand-in) and `steps`, per
    request: `step`, `history` (messages sent), the measured usage `input`,
    `cache_read`, `cache_write`, `output` (all null when the log has none) and the
    estimated tokens sent as `system` prompt, `tools` definitions and other `messages`."""

    def work() -> tuple[int, dict[str, Any]]:
        owner = _owner(request)
        run = visible_runs(owner).filter(public_id=public_id).first()
        if run is None:
            raise ApiError(f"no run {public_id} that you can see", 404)
        choices = estimators_for(owner)
        asked = request.GET.get("estimator", "").strip()
        asked = asked or viewstate.defaults_for(run.model, run.context_window)["estimator"]
        if asked not in choices:
            raise ApiError(f"estimator: unknown {asked!r}; expected one of {', '.join(choices)}")
        used = reads.counted_by(run, asked)
        steps = reads.request_figures(run, used, choices[used])
        return 200, {**_figures(request, run), "estimator": used, "steps": _steps(steps)}

    return _answer(request, work)


def _steps(steps: list[reads.RequestFigures]) -> list[dict[str, Any]]:
    out = []
    for s in steps:
        u = s.usage
        out.append(
            {
                "step": s.step,
                "history": s.history,
                "input": u.input_tokens if u else None,
                "cache_read": u.cache_read if u else None,
                "cache_write": u.cache_write if u else None,
                "output": u.output_tokens if u else None,
                "system": s.system,
                "tools": s.tools,
                "messages": s.messages,
            }
        )
    return out
