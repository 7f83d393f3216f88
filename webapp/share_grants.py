"""Share links a visitor has opened, remembered in their session: each grants read-only
access to one run for as long as the link is not revoked (checked on every request)."""

from __future__ import annotations

from django.http import HttpRequest

SESSION_KEY = "share_tokens"
KEPT = 50


def held(request: HttpRequest) -> list[str]:
    """The share tokens this visitor has opened (most recent last)."""
    return list(request.session.get(SESSION_KEY, []))


def hold(request: HttpRequest, token: str) -> None:
    tokens = [t for t in held(request) if t != token]
    request.session[SESSION_KEY] = [*tokens, token][-KEPT:]
