"""python manage.py sweep : start a sweep from the shell (what the sweep form does) and,
with --wait, follow it until the workers are done and print its totals."""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextsim.analysis.sweep import SweepError, grid, parse_budgets, parse_settings
from webapp import tasks
from webapp.estimators.reads import estimators_for
from webapp.management.owners import command_owner, command_runs
from webapp.sweeps import reads as sweep_selectors
from webapp.sweeps import services as sweeps


class Command(BaseCommand):
    help = "Sweep policies x budgets over runs, one background task per (run, configuration)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", action="append", default=[], help="a run's public id")
        parser.add_argument(
            "--collection", action="append", default=[], help="a collection's public id"
        )
        parser.add_argument("--policy", action="append", required=True)
        parser.add_argument("--budgets", required=True, help='e.g. "100000 200000 400000"')
        parser.add_argument("--hard-limit", type=int, default=1_000_000)
        parser.add_argument("--estimator", default="o200k")
        parser.add_argument(
            "--set", action="append", default=[], metavar="POLICY.PARAM=VALUE", dest="params"
        )
        parser.add_argument("--owner", default="", help="username (default: the local user)")
        parser.add_argument("--title", default="")
        parser.add_argument(
            "--defer",
            metavar="TOOLS",
            help="each policy again with these tools' definitions deferred (tool search): "
            "names or prefix* patterns, comma-separated",
        )
        parser.add_argument("--wait", action="store_true", help="follow it until it is done")
        parser.add_argument("--timeout", type=float, default=600, help="seconds, with --wait")
        parser.add_argument("--json", action="store_true", help="print the outcome as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = command_owner(options["owner"])
        runs = command_runs(owner, options["run"], options["collection"])
        estimators = estimators_for(owner)
        if options["estimator"] not in estimators:
            raise CommandError(
                f"unknown estimator {options['estimator']!r}; expected one of "
                + ", ".join(estimators)
            )
        try:
            configs = grid(
                options["policy"],
                parse_budgets(options["budgets"]),
                parse_settings(options["params"]),
                options["defer"] or "",
            )
        except SweepError as exc:
            raise CommandError(str(exc)) from None
        try:
            sweep = sweeps.create_sweep(
                owner,
                runs,
                configs,
                estimator=options["estimator"],
                hard_limit=options["hard_limit"],
                title=options["title"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        tasks.queue_sweep(sweep)
        self.stderr.write(f"sweep {sweep.public_id}: {len(runs)} runs x {len(configs)} configs")
        if not options["wait"]:
            self.stdout.write(f"/sweeps/{sweep.public_id}/")
            return
        view = self._follow(sweep, options["timeout"])
        if options["json"]:
            self.stdout.write(json.dumps(_as_json(view), indent=1))
        else:
            for config, total in view.by_config:
                self.stdout.write(
                    f"{config.label}: {total.completed_runs} of {total.runs} runs finished, "
                    f"largest request {total.peak_sent:,}, ${total.cost:.2f}"
                )

    def _follow(self, sweep: Any, timeout: float) -> sweep_selectors.SweepView:
        deadline = time.monotonic() + timeout
        while True:
            view = sweep_selectors.sweep_view(sweep)
            self.stderr.write(f"{view.done + view.failed} of {view.total} cells")
            if view.finished:
                return view
            if time.monotonic() > deadline:
                raise CommandError(
                    f"sweep {sweep.public_id} not done after {timeout:g} s: are workers running?"
                )
            time.sleep(0.5)


def _as_json(view: sweep_selectors.SweepView) -> dict[str, Any]:
    return {
        "sweep": view.sweep.public_id,
        "cells": view.total,
        "failed": view.failed,
        "workers": view.workers,
        "configs": [
            {
                **config.to_dict(),
                "runs": total.runs,
                "completed_runs": total.completed_runs,
                "over_budget_runs": total.over_budget_runs,
                "peak_sent": total.peak_sent,
                "total_sent": total.total_sent,
                "cost": total.cost,
            }
            for config, total in view.by_config
        ],
    }
