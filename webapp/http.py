"""The request the views take, typed: Django's HttpRequest with what the middleware
adds (django-htmx's `htmx`, as its documentation types it)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request that went through django_htmx.middleware.HtmxMiddleware."""

    htmx: HtmxDetails


class SignedInRequest(HtmxHttpRequest):
    """A request of a view behind login_required: its user is signed in."""

    user: User
