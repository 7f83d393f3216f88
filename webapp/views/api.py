"""The HTTP API for live streaming, authenticated by an API token
(`Authorization: Bearer <key>`): create runs from a log body, append messages to a run
as an agent produces them, read a run's figures. JSON in and out; errors are
`{"error": "..."}` naming what was wrong and where."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from django_ratelimit.core import is_ratelimited

from contextsim.formats import FormatError, parse_stream
from contextsim.formats.native import parse_message
from webapp.models import Run
from webapp.services import streaming
from webapp.services.api_tokens import owner_of

BODY = "request body"
logger = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _owner(request: HttpRequest) -> AbstractBaseUser:
    """The key's owner. After RATE_BAD_API_KEYS bad keys from one address in a minute,
    every key from it is refused (429) until the minute is over: guessing is slow."""
    rate = settings.RATE_BAD_API_KEYS
    if is_ratelimited(request, group="api-bad-key", key="ip", rate=rate, increment=False):
        raise ApiError("too many bad API keys from your address: wait a minute", 429)
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    owner = owner_of(key.strip()) if scheme.lower() == "bearer" and key.strip() else None
    if owner is None:
        if is_ratelimited(request, group="api-bad-key", key="ip", rate=rate, increment=True):
            raise ApiError("too many bad API keys from your address: wait a minute", 429)
        raise ApiError("missing or revoked API token: send 'Authorization: Bearer <key>'", 401)
    return owner


def _run_of(owner: AbstractBaseUser, public_id: str) -> Run:
    run = Run.objects.filter(public_id=public_id, owner=owner).first()
    if run is None:
        raise ApiError(f"no run {public_id} of yours", 404)
    return run


def _json(request: HttpRequest) -> Any:
    try:
        return json.loads(request.body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(f"{BODY}: invalid JSON ({exc})") from None
    except (RecursionError, ValueError):
        raise ApiError(f"{BODY}: JSON nested too deeply or a number too long to read") from None


def _figures(request: HttpRequest, run: Run) -> dict[str, Any]:
    return {
        "id": run.public_id,
        "title": run.title,
        "messages": run.message_count,
        "requests": run.request_count,
        "revision": run.revision,
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
    except Exception:
        # Nothing was saved (each call is one transaction); the details go to the log.
        logger.exception("API request %s failed", request.path)
        return JsonResponse({"error": "internal error (see the server log)"}, status=500)
    return JsonResponse(body, status=status)


@csrf_exempt
@require_POST
def create_runs(request: HttpRequest) -> HttpResponse:
    """Body: a log in any supported format (`?format=` to skip detection)."""

    def work() -> tuple[int, dict[str, Any]]:
        owner = _owner(request)
        parsed = parse_stream(BODY, io.BytesIO(request.body), request.GET.get("format") or None)
        runs = streaming.create_live_runs(owner, parsed.runs)
        return 201, {"runs": [_figures(request, r) for r in runs], "warnings": parsed.warnings}

    return _answer(request, work)


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
            body = streaming.append_once(
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
    return _answer(request, lambda: (200, _figures(request, _run_of(_owner(request), public_id))))
