"""API tokens: create one (the key is returned once; only its SHA-256 is stored),
revoke one, and find the owner of a key."""

from __future__ import annotations

import hashlib
import secrets

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
    last used."""
    token = (
        ApiToken.objects.select_related("owner")
        .filter(digest=_digest(key), revoked__isnull=True, owner__is_active=True)
        .first()
    )
    if token is None:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used=timezone.now())
    return token.owner
