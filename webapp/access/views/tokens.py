"""API tokens and share links page: create a token (its key is shown once), list and
revoke tokens; list the share links of the person's runs, with a way to each run's."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from webapp.access.services import tokens as api_tokens
from webapp.http import SignedInRequest
from webapp.models import ApiToken, ShareLink


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: SignedInRequest) -> HttpResponse:
    new_key = ""
    if request.method == "POST":
        _, new_key = api_tokens.create_token(request.user, request.POST.get("name", ""))
    context = {
        "tokens": ApiToken.objects.filter(owner=request.user),
        "shares": ShareLink.objects.filter(run__owner=request.user, revoked__isnull=True)
        .select_related("run")
        .order_by("-created")[:200],
        "new_key": new_key,
        "api_base": request.build_absolute_uri("/api/runs/"),
    }
    return render(request, "tokens.html", context, status=201 if new_key else 200)


@login_required
@require_POST
def revoke_token(request: SignedInRequest, pk: int) -> HttpResponse:
    token = ApiToken.objects.filter(pk=pk, owner=request.user).first()
    if token is None:
        raise Http404("no such token")
    api_tokens.revoke_token(token)
    return redirect("tokens")
