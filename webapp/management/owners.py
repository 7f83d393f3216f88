"""Who a management command acts for: the user named by --owner, which must exist (a
typo must not create an account), or the local user, created on first use as `serve`
does."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import CommandError


def command_owner(name: str) -> User:
    users = get_user_model().objects
    if not name:
        user, _ = users.get_or_create(username=settings.LOCAL_USER or "local")
        return user
    found = users.filter(username=name).first()
    if found is None:
        raise CommandError(f"--owner: no user {name!r} (create it with createsuperuser first)")
    return found
