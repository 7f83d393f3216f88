"""Who a management command acts for: the user named by --owner, which must exist (a
typo must not create an account), or the local user, created on first use as `serve`
does; and the runs it names (--run, --collection), which that user must see."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import CommandError
from django.db.models import Q

from webapp.models import Run
from webapp.runs import reads as run_selectors


def command_owner(name: str) -> User:
    users = get_user_model().objects
    if not name:
        user, _ = users.get_or_create(username=settings.LOCAL_USER or "local")
        return user
    found = users.filter(username=name).first()
    if found is None:
        raise CommandError(f"--owner: no user {name!r} (create it with createsuperuser first)")
    return found


def command_runs(owner: User, run_ids: list[str], collection_ids: list[str]) -> list[Run]:
    """The runs named (and the runs of the collections named), all of which the owner
    must be able to see; CommandError naming what is missing."""
    if not run_ids and not collection_ids:
        raise CommandError("no run given: give --run or --collection public ids")
    wanted = Q(public_id__in=run_ids) | Q(collection__public_id__in=collection_ids)
    found = run_selectors.visible_runs(owner).filter(wanted).select_related("collection")
    runs = list(found.order_by("id"))
    missing = sorted(set(run_ids) - {r.public_id for r in runs})
    seen = {r.collection.public_id for r in runs if r.collection}
    missing += sorted(f"collection {c}" for c in set(collection_ids) - seen)
    if missing:
        raise CommandError(
            f"not found, or not visible to {owner.get_username()}: {', '.join(missing)}"
        )
    return runs
