"""API tokens: create one (the key is returned once; only its SHA-256 is stored),
revoke one, find the owner of a key; and who is calling a machine door (`caller`: the
owner of a key, or in local mode the local user)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from datetime import timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from webapp.access.callers import local_mode_for, local_user
from webapp.models import ApiToken

PREFIX = "cs_"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_token(owner: User, name: str) -> tuple[ApiToken, str]:
    """A new token and its key (shown to the person once, never stored)."""
    key = PREFIX + secrets.token_urlsafe(30)
    token = ApiToken.objects.create(
        owner=owner, name=name.strip()[:100] or "API token", prefix=key[:10], digest=_digest(key)
    )
    return token, key


def revoke_token(token: ApiToken) -> None:
    if token.revoked is None:
        ApiToken.objects.filter(pk=token.pk).update(revoked=timezone.now())


def owner_of(key: str) -> User | None:
    """The owner of an active key of an active user, or None; records when the key was
    last used (to the minute: LAST_USED_EVERY): every streamed append asks."""
    found = (
        ApiToken.objects.select_related("owner")
        .only("last_used", "revoked", "owner")
        .filter(digest=_digest(key), revoked__isnull=True, owner__is_active=True)
        .first()
    )
    if found is None:
        return None
    now = timezone.now()
    if found.last_used is None or now - found.last_used >= LAST_USED_EVERY:
        # Not at every call: an agent streaming appends would write it for each one.
        ApiToken.objects.filter(pk=found.pk).update(last_used=now)
    return found.owner


LAST_USED_EVERY = timedelta(minutes=1)
"""How stale a key's `last_used` may be (it says when the key was last used, to the
minute)."""


def caller(key: str, host: str, address: str, headers: Mapping[str, str]) -> User | None:
    """The owner of `key` (an active key of an active user) when one is given, else the
    local user in local mode, else None. A key given and not valid is None even in local
    mode: a wrong key is a mistake to report, not a reason to write as someone else."""
    if key:
        return owner_of(key)
    if local_mode_for(host, address, headers):
        return local_user()
    return None
