"""python manage.py tune : start a tuning from the shell (what the tuning form does) over
runs or collections and, with --wait, follow it until the workers are done and print
each mechanism's recommendation (--json for all of it)."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextsim.analysis.tuning import Mechanism, grid_of, policy_mechanism
from contextsim.engine.simulate import REPLAY
from contextsim.registry import POLICIES, mechanisms
from webapp import tasks
from webapp.estimators.reads import estimators_for
from webapp.management.owners import command_owner, command_runs
from webapp.models import Tuning
from webapp.tuning import reads, services


class Command(BaseCommand):
    help = (
        "Search context mechanisms' settings over runs, one background task per (run, mechanism)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", action="append", default=[], help="a run's public id")
        parser.add_argument(
            "--collection", action="append", default=[], help="a collection's public id"
        )
        parser.add_argument(
            "--mechanism", action="append", default=[], help="only these (default: every one)"
        )
        parser.add_argument(
            "--policy", default="", help="also any policy by name, over the values of --grid"
        )
        parser.add_argument(
            "--grid",
            action="append",
            default=[],
            metavar="KEY=V1,V2,...",
            help="values of a parameter of --policy to search (repeatable)",
        )
        parser.add_argument("--estimator", default="o200k")
        parser.add_argument("--owner", default="", help="username (default: the local user)")
        parser.add_argument("--wait", action="store_true", help="follow it until it is done")
        parser.add_argument("--timeout", type=float, default=600, help="seconds, with --wait")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = command_owner(options["owner"])
        runs = command_runs(owner, options["run"], options["collection"])
        asked = options["mechanism"]
        extra = self._policy(options["policy"], options["grid"])
        # A mechanism no chosen run's agent has is tried on every run (as `contextsim
        # tune --mechanism` does); the others on the runs that have them.
        own = {m.name for r in runs for m in mechanisms(r.format)}
        if options["estimator"] not in estimators_for(owner):
            raise CommandError(f"unknown estimator {options['estimator']!r}")
        try:
            tuning = services.create_tuning(
                owner,
                runs,
                estimator=options["estimator"],
                only=[m for m in asked if m in own] if asked or extra else None,
                everywhere=[m for m in asked if m not in own],
                extra=extra,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        tasks.queue_tuning(tuning)
        cells = tuning.cells.count()
        self.stderr.write(f"tuning {tuning.public_id}: {cells} searches")
        if not options["wait"]:
            self.stdout.write(f"/tunings/{tuning.public_id}/")
            return
        self._follow(tuning, options["timeout"])
        views = reads.mechanism_views(tuning)
        if options["json"]:
            self.stdout.write(json.dumps([_as_json(v) for v in views], indent=1))
            return
        for v in views:
            if v.no_better is not None:
                self.stdout.write(f"{v.label}: no setting costs less than the runs as they ran")
                continue
            if v.chosen is None or v.setting is None:
                self.stdout.write(f"{v.label}: no setting keeps every run within its limit")
                continue
            setting = ", ".join(f"{k}={x}" for k, x in v.setting.items())
            self.stdout.write(
                f"{v.label}: {setting}: ${v.chosen.cost:.2f} against ${v.current.cost:.2f} as "
                f"it ran (saves {100 * v.saved_share:.1f}%), risk {v.chosen.risk}"
            )

    def _policy(self, policy: str, grid: list[str]) -> list[Mechanism]:
        """The mechanism --policy and --grid ask for ([] without --policy)."""
        if not policy:
            if grid:
                raise CommandError("--grid: give the policy it searches with --policy")
            return []
        if policy not in POLICIES or policy == REPLAY:
            raise CommandError(f"--policy: unknown policy {policy!r}")
        chosen = POLICIES[policy]
        try:
            return [policy_mechanism(policy, chosen.label, chosen.Params, grid_of(grid))]
        except ValueError as exc:
            raise CommandError(f"--grid: {exc}") from None

    def _follow(self, tuning: Tuning, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            found = reads.progress(tuning)
            self.stderr.write(f"{found.done + found.failed + found.cancelled} of {found.total}")
            if found.finished:
                return
            if time.monotonic() > deadline:
                raise CommandError(
                    f"tuning {tuning.public_id} not done after {timeout:g} s: are workers running?"
                )
            time.sleep(0.5)


def _as_json(view: reads.MechanismView) -> dict[str, Any]:
    return {
        "mechanism": view.name,
        "label": view.label,
        "policy": view.policy,
        "runs": view.runs,
        "simulations": view.search.simulated if view.search else 0,
        "grid_simulations": view.search.grid if view.search else 0,
        "current": dataclasses.asdict(view.current),
        "as_logged": dataclasses.asdict(view.logged),
        "recommended": (
            {"setting": view.setting, **dataclasses.asdict(view.chosen)}
            if view.chosen is not None
            else None
        ),
        "frontier": [{"setting": s, **dataclasses.asdict(o)} for s, o in view.frontier],
        "at_risk": [r.run.public_id for r in view.at_risk],
        "configuration": [{"target": s.target, "text": s.text} for s in view.snippets],
    }
