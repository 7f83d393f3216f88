"""The measured usage the overview adds up: each run's responses summed by day and by
the model that answered, with their dollars (each response priced as the run's
dashboard prices it: webapp.dashboard.analysis.run_prices, contextsim.truth.prices).

A run's sums are stored with its derived data (RunShares.data["days"], written by
webapp.store.actions.shares) once it is counted and idle, so the overview reads a few
numbers per run and day, not every response; a run without them for its revision (new,
growing) is summed from its responses on each read, the same way. Reads only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import F

from contextsim.analysis.context_shares import LAYOUT
from contextsim.model import Usage
from contextsim.truth.costs import Prices
from contextsim.truth.prices import response_cost
from webapp.dashboard.analysis import run_prices
from webapp.models import Message, Run, RunShares

CHUNK = 5_000
"""Runs read at a time."""


@dataclass(frozen=True, slots=True)
class RunKind:
    """What pricing and dating a run's responses takes from the run: its model and
    format (its agent), and the day it was stored (for a response the log gives no time)."""

    model: str
    agent: str
    created: dt.date


@dataclass(frozen=True, slots=True)
class Tally:
    """Responses summed: tokens (input without the cached, cache reads, cache writes,
    output), dollars, how many, and how many had no price (not in `cost`)."""

    input: int
    cache_read: int
    cache_write: int
    output: int
    cost: float
    responses: int
    unpriced: int

    def to_list(self) -> list[Any]:
        return [
            self.input,
            self.cache_read,
            self.cache_write,
            self.output,
            self.cost,
            self.responses,
            self.unpriced,
        ]


def run_days(run: Run) -> dict[str, dict[str, list[Any]]]:
    """The run's responses summed by day (ISO) and model, as stored (Tally.to_list)."""
    kind = RunKind(run.model, run.format, run.created.date())
    out: dict[str, dict[str, list[Any]]] = {}
    for _, day, model, tally in _from_responses({run.pk: kind}):
        found = out.setdefault(day.isoformat(), {}).get(model)
        if found is None:
            out[day.isoformat()][model] = tally.to_list()
        else:
            out[day.isoformat()][model] = [
                a + b for a, b in zip(found, tally.to_list(), strict=True)
            ]
    return out


def tallies(
    runs: Mapping[int, RunKind], since: dt.date | None, until: dt.date | None, model: str
) -> Iterator[tuple[int, dt.date, str, Tally]]:
    """(run, day, model, its responses summed) of the runs' responses from `since` to
    `until` (days, both included; None: no bound) answered by `model` ("" any): a run's
    stored sums where they are of its revision, else its responses read now."""
    stored = _stored(list(runs))
    fresh = {pk: kind for pk, kind in runs.items() if pk not in stored}
    found = _from_stored(stored)
    for run_id, day, answered, tally in (*found, *_from_responses(fresh)):
        if (since is not None and day < since) or (until is not None and day > until):
            continue
        if model and answered != model:
            continue
        yield run_id, day, answered, tally


def _stored(ids: list[int]) -> dict[int, dict[str, dict[str, list[Any]]]]:
    out: dict[int, dict[str, dict[str, list[Any]]]] = {}
    ids = sorted(ids)
    for first in range(0, len(ids), CHUNK):
        rows = RunShares.objects.filter(
            run_id__in=ids[first : first + CHUNK],
            revision=F("run__revision"),
            data__layout=LAYOUT,
        ).values_list("run_id", "data__days")
        out.update((run_id, days) for run_id, days in rows if isinstance(days, dict))
    return out


def _from_stored(
    stored: dict[int, dict[str, dict[str, list[Any]]]],
) -> Iterator[tuple[int, dt.date, str, Tally]]:
    for run_id, days in stored.items():
        for day, models in days.items():
            when = dt.date.fromisoformat(day)
            for model, figures in models.items():
                yield run_id, when, model, Tally(*figures)


def _from_responses(runs: Mapping[int, RunKind]) -> Iterator[tuple[int, dt.date, str, Tally]]:
    """Each measured response of the runs, one Tally each."""
    prices: dict[tuple[str, str], Prices] = {}
    ids = sorted(runs)
    for first in range(0, len(ids), CHUNK):
        rows = Message.objects.filter(
            run_id__in=ids[first : first + CHUNK], usage_input__isnull=False
        ).values_list(
            "run_id",
            "timestamp",
            "usage_input",
            "usage_cache_read",
            "usage_cache_write",
            "usage_output",
            "usage_cache_write_1h",
            "usage_model",
        )
        for run_id, when, u_in, u_read, u_write, u_out, u_hour, u_model in rows.iterator():
            kind = runs[run_id]
            usage = Usage(
                u_in or 0, u_read or 0, u_write or 0, u_out or 0, u_hour or 0, u_model or ""
            )
            key = (kind.model, kind.agent)
            if key not in prices:
                prices[key] = run_prices(Run(model=kind.model, format=kind.agent))
            cost = response_cost(kind.model, usage, prices[key])
            yield (
                run_id,
                when.date() if when is not None else kind.created,
                usage.model or kind.model,
                Tally(
                    usage.input_tokens,
                    usage.cache_read,
                    usage.cache_write,
                    usage.output_tokens,
                    cost or 0.0,
                    1,
                    int(cost is None),
                ),
            )
