"""Whether a request is one single-user local mode signs in, and who that local user
is. A machine door (the API, the capture proxy, the OTLP receiver) asks through
webapp.access.services.tokens.caller, the pages through webapp.access.local_mode, so
the rule is written once: configured explicitly, local mode signs in every caller;
implied by `manage.py serve` on a loopback address, only a caller that is plainly
local (a loopback Host, from a loopback address, no proxy header)."""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
LOOPBACK_ADDRESSES = frozenset({"127.0.0.1", "::1"})
PROXY_HEADERS = ("x-forwarded-for", "x-forwarded-host", "forwarded", "via")


def host_name(host: str) -> str:
    """The name of a Host header without its port ("[::1]:8000" -> "::1")."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def plainly_local(host: str, address: str, headers: Mapping[str, str]) -> bool:
    """True for a request to a loopback name, from a loopback address, that no proxy
    says it forwarded. `headers` are keyed by lower-case names."""
    return (
        host_name(host) in LOOPBACK_NAMES
        and address in LOOPBACK_ADDRESSES
        and not any(headers.get(h) for h in PROXY_HEADERS)
    )


def local_mode_for(host: str, address: str, headers: Mapping[str, str]) -> bool:
    """Whether single-user local mode signs this request in."""
    if not settings.LOCAL_USER:
        return False
    return settings.LOCAL_USER_EXPLICIT or plainly_local(host, address, headers)


def local_user() -> User:
    user, _ = get_user_model().objects.get_or_create(username=settings.LOCAL_USER)
    return user
