"""The OTLP/HTTP trace receiver (``POST /v1/traces``, also ``/otlp/v1/traces``): what
OpenTelemetry exporters and collectors send, answered as the OTLP specification says.
Authenticated by a contextsim API key (`Authorization: Bearer <key>`), or none in
single-user local mode (webapp.callers)."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from django_ratelimit.core import is_ratelimited

from contextsim.formats import FormatError
from webapp import otlp_wire as wire
from webapp.callers import caller
from webapp.services.spans import receive_export


@csrf_exempt
@require_POST
def traces(request: HttpRequest) -> HttpResponse:
    """Body: an ExportTraceServiceRequest (protobuf or JSON, gzip or not)."""
    kind = wire.media_type(request.content_type or "")
    answer_kind = kind if kind == wire.PROTOBUF else wire.JSON
    rate = settings.RATE_BAD_API_KEYS
    if is_ratelimited(request, group="api-bad-key", key="ip", rate=rate, increment=False):
        return _too_many(answer_kind)
    owner = caller(
        _key(request),
        request.META.get("HTTP_HOST", ""),
        request.META.get("REMOTE_ADDR", ""),
        {k.lower(): v for k, v in request.headers.items()},
    )
    if owner is None:
        is_ratelimited(request, group="api-bad-key", key="ip", rate=rate, increment=True)
        message = "missing or revoked API key: send 'Authorization: Bearer <key>'"
        response = _error(answer_kind, 401, wire.UNAUTHENTICATED, message)
        response["WWW-Authenticate"] = "Bearer"
        return response
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        export = wire.export_of(
            request.body, kind, request.headers.get("Content-Encoding", ""), limit
        )
        receipt = receive_export(owner, export.data, export.serialized)
    except wire.Unsupported as exc:
        return _error(wire.JSON, 415, wire.INVALID_ARGUMENT, str(exc))
    except (wire.Undecodable, FormatError) as exc:
        return _error(answer_kind, 400, wire.INVALID_ARGUMENT, str(exc))
    except (wire.TooBig, RequestDataTooBig) as exc:
        message = (
            str(exc) if isinstance(exc, wire.TooBig) else f"request body: over {limit:,} bytes"
        )
        return _error(answer_kind, 413, wire.RESOURCE_EXHAUSTED, message)
    return HttpResponse(wire.success(answer_kind, receipt.rejected), content_type=answer_kind)


def _key(request: HttpRequest) -> str:
    """The bearer key; any other Authorization is passed whole, to be refused."""
    value = request.headers.get("Authorization", "").strip()
    scheme, _, key = value.partition(" ")
    return key.strip() if scheme.lower() == "bearer" else value


def _error(kind: str, status: int, code: int, message: str) -> HttpResponse:
    return HttpResponse(wire.status(kind, code, message), status=status, content_type=kind)


def _too_many(kind: str) -> HttpResponse:
    message = "too many bad API keys from your address: wait a minute"
    response = _error(kind, 429, wire.RESOURCE_EXHAUSTED, message)
    response["Retry-After"] = str(settings.RATE_RETRY_AFTER)
    return response
