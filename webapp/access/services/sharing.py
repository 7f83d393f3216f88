"""Share links: create one for a run, revoke one."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.utils import timezone

from webapp.models import Run, ShareLink


def create_link(run: Run, user: User) -> ShareLink:
    return ShareLink.objects.create(run=run, created_by=user)


def revoke_link(link: ShareLink) -> None:
    """Revoke at once: every view checks the link on every request."""
    if link.revoked is None:
        ShareLink.objects.filter(pk=link.pk).update(revoked=timezone.now())
