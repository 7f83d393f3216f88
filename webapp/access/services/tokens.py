"""API tokens: create one (the key is returned once; only its SHA-256 is stored),
revoke one, find the owner of a key; and who is calling a machine door (`caller`: the
owner of a key, or in local mode the local user)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from webapp.access.callers import local_mode_for, local_user
from webapp.models import ApiToken
from webapp.runtime import statements

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
    last used (to the minute: LAST_USED_EVERY). Read by written-out statements
    (webapp.runtime.statements): every streamed append asks."""
    found = statements.read(
        ApiToken, ("id", "owner", "last_used", "revoked"), {"digest": _digest(key)}
    )
    if found is None or found.revoked is not None:
        return None
    user = get_user_model()
    fields = [f.name for f in user._meta.concrete_fields]
    owner = statements.read(user, fields, {user._meta.pk.name: found.owner_id})
    if owner is None or not owner.is_active:
        return None
    now = timezone.now()
    if found.last_used is None or now - found.last_used >= LAST_USED_EVERY:
        # Not at every call: an agent streaming appends would write it for each one.
        found.last_used = now
        statements.update_rows([found], ["last_used"])
    return owner


LAST_USED_EVERY = timedelta(minutes=1)
"""How stale a key's `last_used` may be (it says when the key was last used, to the
minute)."""


def caller(
    key: str, host: str, address: str, headers: Mapping[str, str]
) -> AbstractBaseUser | None:
    """The owner of `key` (an active key of an active user) when one is given, else the
    local user in local mode, else None. A key given and not valid is None even in local
    mode: a wrong key is a mistake to report, not a reason to write as someone else."""
    if key:
        return owner_of(key)
    if local_mode_for(host, address, headers):
        return local_user()
    return None
