"""Reading share links: the active link a token names."""

from __future__ import annotations

from django.http import Http404

from webapp.models import ShareLink


def active_share(token: str) -> ShareLink:
    link = ShareLink.objects.select_related("run").filter(token=token, revoked__isnull=True)
    found = link.first()
    if found is None:
        raise Http404("this share link does not exist or was revoked")
    return found
