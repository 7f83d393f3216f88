"""The security headers of static files. WhiteNoise answers them before the middleware
that sets a page's (X-Frame-Options, the Content-Security-Policy) sees the request, so
they are added here: no static file may be framed, or run anything as a document."""

from __future__ import annotations

from collections.abc import MutableMapping

STATIC_POLICY = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; sandbox"
"""A static file opened on its own (an SVG, say) is a document that loads and runs
nothing; the pages that use the scripts and styles are not bound by it."""


def add_headers(headers: MutableMapping[str, str], path: str, url: str) -> None:
    """WhiteNoise's WHITENOISE_ADD_HEADERS_FUNCTION."""
    headers["X-Frame-Options"] = "DENY"
    headers["Content-Security-Policy"] = STATIC_POLICY
