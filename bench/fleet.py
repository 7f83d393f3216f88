"""`python -m bench.fleet N`: import a fleet of N generated 200-step runs into the
database the environment names (DATABASE_URL, CONTEXTSIM_DATA_DIR), public, counted by
chars4 only, and print their public ids as JSON (a user `bench` is created to sweep
them). Used by the `fleet` suite, in its own
process so that each database gets its own Django."""

from __future__ import annotations

import json
import os
import sys

STEPS = 200
BATCH = 50


def fleet_runs(count: int, first: int = 0):  # type: ignore[no-untyped-def]
    """`count` runs of STEPS requests, small tool results, deterministic by seed."""
    from bench.synthetic import Spec, generate

    for seed in range(first, first + count):
        spec = Spec(
            STEPS,
            seed=seed,
            turn_every=40,
            read_share=0.0,
            huge_share=0.0,
            system_tokens=2_000,
            small_tokens=(20, 400),
        )
        yield generate(spec)


def main(count: int) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from contextsim.ingest.base import ParsedFile
    from webapp.models import Visibility
    from webapp.store.actions.saving import do_save_runs

    get_user_model().objects.get_or_create(username="bench")  # who sweeps the fleet
    ids: list[str] = []
    for first in range(0, count, BATCH):
        runs = tuple(fleet_runs(min(BATCH, count - first), first))
        saved = do_save_runs(
            ParsedFile("native", runs),
            owner=None,
            visibility=Visibility.PUBLIC,
            estimators=("chars4",),
        )
        ids += [r.public_id for r in saved]
    json.dump(ids, sys.stdout)


if __name__ == "__main__":
    main(int(sys.argv[1]))
