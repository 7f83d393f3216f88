"""A full disk answered as such: 507 and what happened, not a bare 500.

Whatever was being written when the disk filled is rolled back by its transaction (an
upload's file is removed by the upload itself: webapp.ingest.uploads.services); this
middleware only says so, as JSON to the machine doors and as a page to people."""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

SAID = "the server's disk is full: nothing was saved; free some space and send it again"


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` says the disk (or the database's) is full."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(exc, OperationalError) and "full" in str(exc).lower()


def full_disk_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        return get_response(request)

    def process_exception(request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not disk_full(exc):
            return None
        logger.error("disk full while answering %s %s: %s", request.method, request.path, exc)
        if request.path.startswith(("/api/", "/v1/", "/otlp/")):
            return JsonResponse({"error": SAID}, status=507)
        return HttpResponse(SAID, status=507, content_type="text/plain; charset=utf-8")

    middleware.process_exception = process_exception  # type: ignore[attr-defined]
    return middleware
