"""Single-user local mode: every visitor is signed in as one user, so a newcomer can
upload at once. A shared deployment leaves it off and signs people in with passwords.

It is on in two cases only. Configured explicitly (CONTEXTSIM_LOCAL_USER): the operator
chose it, for every request. Or implied by `manage.py serve` on a loopback address
(settings.LOCAL_USER set, LOCAL_USER_EXPLICIT false): then only for a request that is
plainly local, its Host a loopback name, from a loopback address and with no proxy's
forwarding header. A reverse proxy on the same machine forwarding a public host name
(or saying it forwarded) is not local: its visitors get the sign-in page."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import get_user_model, login
from django.http import HttpRequest, HttpResponse

from webapp.access import grants as share_grants
from webapp.access.callers import PROXY_HEADERS, plainly_local


def is_plainly_local(request: HttpRequest) -> bool:
    meta = request.META
    headers = {h: str(meta.get("HTTP_" + h.upper().replace("-", "_"), "")) for h in PROXY_HEADERS}
    return plainly_local(str(meta.get("HTTP_HOST", "")), str(meta.get("REMOTE_ADDR", "")), headers)


MACHINE_PATHS = ("/api/", "/v1/", "/otlp/", "/proxy/")
"""Doors for programs (the API, the OTLP receiver, the capture proxy): they ask who
calls through webapp.access.callers, and a program keeps no cookies, so a login session made
for each of its calls would only pile up session rows."""


def local_user_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        wanted = settings.LOCAL_USER and (settings.LOCAL_USER_EXPLICIT or is_plainly_local(request))
        wanted = wanted and not request.path.startswith(MACHINE_PATHS)
        if wanted and not request.user.is_authenticated:
            user, _ = get_user_model().objects.get_or_create(username=settings.LOCAL_USER)
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return get_response(request)

    return middleware


def no_store_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Private answers are never kept by a browser or a proxy cache: every page of a
    signed-in person, every API answer and every page opened through a share link
    (the tokens page shows a new key once; a run's page shows private content)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        user = getattr(request, "user", None)
        private = (
            (user is not None and user.is_authenticated)
            or request.path.startswith(("/api/", "/s/"))
            or bool(share_grants.held(request))
        )
        if private and not request.path.startswith("/" + settings.STATIC_URL.lstrip("/")):
            response["Cache-Control"] = "no-store"
        return response

    return middleware


def upload_size_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """A request body over the upload limit is refused from its Content-Length, before
    any of it is read (413), so a huge upload costs neither disk nor memory."""

    def middleware(request: HttpRequest) -> HttpResponse:
        try:
            size = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            size = 0
        limit = settings.MAX_UPLOAD_BYTES + 1024 * 1024  # the form's other fields
        if size > limit:
            return HttpResponse(
                f"The upload is {size:,} bytes; the limit is {settings.MAX_UPLOAD_BYTES:,} "
                "(CONTEXTSIM_MAX_UPLOAD_BYTES).",
                status=413,
                content_type="text/plain; charset=utf-8",
            )
        return get_response(request)

    return middleware
