"""Share links a visitor has opened, remembered in their session: each grants read-only
access to one run for as long as the link is not revoked (checked on every request).

A session that gains a grant gets a new key (so a session id planted before cannot see
what the link opens), and a sign-in or sign-out drops the grants: they belong to the
visitor who opened the links, not to whoever signs in next in that browser."""

from __future__ import annotations

from django.http import HttpRequest

SESSION_KEY = "share_tokens"
KEPT = 50


def held(request: HttpRequest) -> list[str]:
    """The share tokens this visitor has opened (most recent last)."""
    return list(request.session.get(SESSION_KEY, []))


def hold(request: HttpRequest, token: str) -> None:
    tokens = [t for t in held(request) if t != token]
    request.session.cycle_key()
    request.session[SESSION_KEY] = [*tokens, token][-KEPT:]


def drop(sender: object, request: HttpRequest | None = None, **kwargs: object) -> None:
    """Forget the grants (connected to the sign-in and sign-out signals)."""
    if request is not None and hasattr(request, "session"):
        request.session.pop(SESSION_KEY, None)
