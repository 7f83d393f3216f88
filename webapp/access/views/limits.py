"""What a rate-limited visitor gets: 429 Too Many Requests, with when to try again."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse


def too_many(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """The answer to a request over a limit (RATELIMIT_VIEW; not routed)."""
    response = HttpResponse(
        "Too many attempts from your address: wait a minute and try again.",
        status=429,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(settings.RATE_RETRY_AFTER)
    return response


def sign_in_rate(group: str, request: HttpRequest) -> str:
    """The sign-in limit as configured now (read per request, not at import)."""
    return str(settings.RATE_SIGN_IN)
