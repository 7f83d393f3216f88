"""API tokens: create one (the key is returned once; only its SHA-256 is stored),
revoke one, and find the owner of a key."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from webapp.models import ApiToken

PREFIX = "cs_"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_token(owner: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """A new token and its key (shown to the person once, never stored)."""
    key = PREFIX + secrets.token_urlsafe(30)
    token = ApiToken.objects.create(
        owner=owner, name=name.strip()[:100] or "API token", prefix=key[:10], digest=_digest(key)
    )
    return token, key


def revoke_token(token: ApiToken) -> None:
    if token.revoked is None:
        ApiToken.objects.filter(pk=token.pk).update(revoked=timezone.now())


def owner_of(key: str) -> AbstractBaseUser | None:
    """The owner of an active key of an active user, or None; records when the key was
    last used (to the minute: LAST_USED_EVERY)."""
    token = (
        ApiToken.objects.select_related("owner")
        .filter(digest=_digest(key), revoked__isnull=True, owner__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used is None or now - token.last_used >= LAST_USED_EVERY:
        # Not at every call: an agent streaming appends would write it for each one.
        ApiToken.objects.filter(pk=token.pk).update(last_used=now)
    return token.owner


LAST_USED_EVERY = timedelta(minutes=1)
"""How stale a key's `last_used` may be (it says when the key was last used, to the
minute)."""
