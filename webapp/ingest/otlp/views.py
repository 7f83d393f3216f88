"""The OTLP/HTTP trace and logs receivers (``POST /v1/traces`` and ``/v1/logs``, also
under ``/otlp/``): what OpenTelemetry exporters and collectors send, answered as the
OTLP specification says.
Authenticated by a contextsim API key (`Authorization: Bearer <key>`), or none in
single-user local mode (webapp.access.callers)."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from django_ratelimit.core import is_ratelimited

from contextsim.ingest.base import FormatError
from webapp.access.services.tokens import caller
from webapp.ingest.otlp import wire as wire
from webapp.ingest.otlp.services.logs import receive_logs
from webapp.ingest.otlp.services.receiving import receive_export


@csrf_exempt
@require_POST
def traces(request: HttpRequest) -> HttpResponse:
    """Body: an ExportTraceServiceRequest (protobuf or JSON, gzip or not)."""
    return _receive(request, logs=False)


@csrf_exempt
@require_POST
def logs(request: HttpRequest) -> HttpResponse:
    """Body: an ExportLogsServiceRequest (protobuf or JSON, gzip or not): its GenAI
    message events join their model call spans (webapp.ingest.otlp.services.logs)."""
    return _receive(request, logs=True)


def _receive(request: HttpRequest, logs: bool) -> HttpResponse:
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
    encoding = request.headers.get("Content-Encoding", "")
    try:
        if logs:
            receipt = receive_logs(owner, wire.logs_of(request.body, kind, encoding, limit))
        else:
            export = wire.export_of(request.body, kind, encoding, limit)
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
    answer = wire.success(answer_kind, receipt.rejected, logs=logs)
    return HttpResponse(answer, content_type=answer_kind)


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
