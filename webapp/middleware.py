"""Single-user local mode: with CONTEXTSIM_LOCAL_USER set (as `manage.py serve` does),
every visitor is signed in as that user, so a newcomer can upload at once. A shared
deployment leaves it unset and signs people in with passwords."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import get_user_model, login
from django.http import HttpRequest, HttpResponse


def local_user_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        if settings.LOCAL_USER and not request.user.is_authenticated:
            user, _ = get_user_model().objects.get_or_create(username=settings.LOCAL_USER)
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return get_response(request)

    return middleware
