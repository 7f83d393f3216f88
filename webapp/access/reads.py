"""Reading share links: the active link a token names."""

from __future__ import annotations

from django.http import Http404

from webapp.models import Run, ShareLink


def active_share(token: str) -> ShareLink:
    link = ShareLink.objects.select_related("run").filter(token=token, revoked__isnull=True)
    found = link.first()
    if found is None:
        raise Http404("this share link does not exist or was revoked")
    return found


def share_token(run: Run) -> str:
    """The token of the run's newest share link that is not revoked, "" for none."""
    found = run.shares.filter(revoked__isnull=True).values_list("token", flat=True).first()
    return found or ""
