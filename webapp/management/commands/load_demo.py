"""python manage.py do_load_demo : save the demo runs once (idempotent)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from webapp.store.actions.demo import do_load_demo


class Command(BaseCommand):
    help = "Load the deterministic demo runs (the seed incidents), once."

    def handle(self, *args: Any, **options: Any) -> None:
        created = do_load_demo()
        self.stdout.write(f"demo runs: {created} created" if created else "demo runs: present")
