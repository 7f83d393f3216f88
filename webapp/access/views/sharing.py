"""Share links: the owner's page to create and revoke them, and the link itself, which
remembers the grant in the visitor's session and opens the run (or one of its pages)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import Resolver404, resolve, reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.access import grants as share_grants
from webapp.access.reads import active_share
from webapp.access.services import sharing
from webapp.http import SignedInRequest
from webapp.runs import reads as runs


@login_required
@require_http_methods(["GET", "POST"])
def share_page(request: SignedInRequest, public_id: str) -> HttpResponse:
    run = runs.get_owned_run(request.user, public_id)
    target = _target(run.public_id, request.GET.get("next", ""))
    if request.method == "POST":
        sharing.create_link(run, request.user)
        query = f"?{urlencode({'next': target})}" if target else ""
        return redirect(reverse("share", args=[run.public_id]) + query)
    links = [
        (link, request.build_absolute_uri(_link_url(link.token, target)))
        for link in run.shares.all()
    ]
    context = {"run": run, "links": links, "target": target}
    return render(request, "share.html", context)


@login_required
@require_POST
def revoke_share(request: SignedInRequest, public_id: str, token: str) -> HttpResponse:
    run = runs.get_owned_run(request.user, public_id)
    link = run.shares.filter(token=token).first()
    if link is None:
        raise Http404("no such share link")
    sharing.revoke_link(link)
    return redirect("share", run.public_id)


@require_GET
def open_share(request: HttpRequest, token: str) -> HttpResponse:
    link = active_share(token)
    share_grants.hold(request, link.token)
    target = _target(link.run.public_id, request.GET.get("next", ""))
    return redirect(target or reverse("run", args=[link.run.public_id]))


RUN_PAGES = {"run", "step", "ledger", "run-requests", "run-estimators", "export", "message-text"}
"""The pages of one run a share link may open."""


def _target(public_id: str, path: str) -> str:
    """`path` if it is one of this run's pages on this site (resolved as Django routes
    it, so no encoding trick leads elsewhere), else ''."""
    parts = urlsplit(path)
    if parts.scheme or parts.netloc or "%" in parts.path or "\\" in path:
        return ""
    try:
        match = resolve(parts.path)
    except Resolver404:
        return ""
    if match.url_name not in RUN_PAGES or match.kwargs.get("public_id") != public_id:
        return ""
    return path


def _link_url(token: str, target: str) -> str:
    url = reverse("open-share", args=[token])
    return f"{url}?{urlencode({'next': target})}" if target else url
