"""Reading estimators: the registered ones and a user's own fitted ones, each request's
estimates beside its measured usage, and a comparison by script as its table shows it."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User

from contextsim.analysis.estimator_report import signed_error
from contextsim.counting.estimators import ESTIMATORS, Estimator
from contextsim.counting.fitting import CustomEstimator, Rates
from contextsim.engine.replay import replay_log
from contextsim.model import request_bounds
from webapp.models import CustomRates, Message, Run
from webapp.store.reads import skeleton_of


def estimators_for(user: User | AnonymousUser) -> dict[str, Estimator]:
    """The registered estimators and the user's own fitted ones, by name."""
    found: dict[str, Estimator] = dict(ESTIMATORS)
    if user.is_authenticated:
        for row in CustomRates.objects.filter(owner=user).order_by("created"):
            found[row.estimator_name] = as_estimator(row)
    return found


def custom_rates(user: User | AnonymousUser) -> list[CustomRates]:
    if not user.is_authenticated:
        return []
    return list(CustomRates.objects.filter(owner=user).order_by("-created"))


def as_estimator(row: CustomRates) -> CustomEstimator:
    return CustomEstimator(row.estimator_name, Rates(dict(row.rates)), row.label)


@dataclass(frozen=True, slots=True)
class RequestRow:
    """One request of a run: its history size and token figures."""

    step: int
    history: int
    estimates: dict[str, int]
    measured: int | None
    response_kind: str
    tools: str


def request_rows(run: Run) -> list[RequestRow]:
    """Per request: the estimated tokens of its history by every estimator whose counts
    are made (sums of the counts stored with the messages; an estimator whose counts a
    live run left for later, message_rows.LIVE_COUNTED, or an import gave up on counts
    the run now through its skeleton, which stores them with the messages) beside the
    measured context when the log has it. Those an import is still counting
    (Run.counting) are left out."""
    rows = list(
        Message.objects.filter(run=run)
        .order_by("index")
        .values_list(
            "role",
            "kind",
            "counts",
            "usage_input",
            "usage_cache_read",
            "usage_cache_write",
            "tool_names",
        )
    )
    # Estimators still counting (Run.counting) have no figures yet: left out, not
    # shown as 0 (the dashboard shows their stand-ins meanwhile).
    totals: dict[str, list[int]] = {}
    for name in ESTIMATORS:
        if name in run.counting:
            continue
        stored = [row[2].get(name) for row in rows]
        if None in stored:
            stored = list(skeleton_of(run, name).tokens)
            if len(stored) != len(rows):
                continue  # the run changed meanwhile: left out of this view
        totals[name] = list(accumulate(stored, initial=0))
    bounds = request_bounds([r[0] for r in rows])
    sent = _as_sent(run, list(totals), len(bounds), len(rows))
    out = []
    for k, (end, response) in enumerate(bounds):
        measured = None
        kind, tools = "pending", ""
        if response is not None:
            _, kind, _, u_in, u_read, u_write, tools = rows[response]
            if u_in is not None:
                measured = u_in + (u_read or 0) + (u_write or 0)
        if sent is None:
            estimates, history = {name: sums[end] for name, sums in totals.items()}, end
        else:
            history, estimates = sent[0][k], {name: column[k] for name, column in sent[1].items()}
        out.append(RequestRow(k, history, estimates, measured, kind, tools))
    return out


def _as_sent(
    run: Run, names: list[str], steps: int, size: int
) -> tuple[list[int], dict[str, list[int]]] | None:
    """For a run whose log compacted or shortened what it sent: per request, the
    messages sent and each estimator's count of them as the log replays them
    (as_logged, the dashboard's baseline), not of the whole history. None for a run
    whose requests are its whole history (the stored counts' sums say it)."""
    if not run.compactions and not run.elisions:
        return None
    columns: dict[str, list[int]] = {}
    history: list[int] = []
    for name in names:
        sk = skeleton_of(run, name)
        if sk.size != size or sk.steps != steps:
            continue  # the run changed meanwhile: left out of this view
        log = replay_log(sk)
        columns[name] = list(log.estimated)
        history = [
            p.end - max(p.gap_end - p.gap_start, 0) + (1 if p.gap_end > p.gap_start else 0)
            for p in log.plans
        ]
    return (history, columns) if history else None


FEW_TOKENS = 100
"""A script with fewer reference tokens than this (or under FEW_SHARE of the text's) has
errors too noisy to judge an estimator by: a handful of tokens either way is a large
share. They are shown muted, with their reason, and without a bar."""
FEW_SHARE = 0.02
"""(templates/estimators/_script_table.html states both figures to the reader.)"""


def script_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Per script (then the total): figures and each estimator's signed error; `few`
    marks a script with too few tokens for its errors to mean much (FEW_TOKENS)."""
    rows = []
    whole = report["total"]["reference"]
    for script, row in [*report["scripts"].items(), ("total", report["total"])]:
        estimates = []
        for name in ESTIMATORS:
            error = signed_error(row.get(name, 0), row["reference"])
            estimates.append(
                {
                    "name": name,
                    "tokens": row.get(name, 0),
                    "error": error,
                    "width": min(abs(error or 0) * 100, 100),
                }
            )
        per_token = row["chars"] / row["reference"] if row["reference"] else None
        few = script != "total" and (
            row["reference"] < FEW_TOKENS or row["reference"] < FEW_SHARE * whole
        )
        rows.append(
            {
                "script": script,
                "few": few,
                "chars": row["chars"],
                "reference": row["reference"],
                "per_token": per_token,
                "estimates": estimates,
            }
        )
    return rows


def playground_limit(user: User | AnonymousUser) -> int:
    """Characters the playground counts for this person (settings.MAX_PLAYGROUND_CHARS;
    a tenth of it for a visitor who is not signed in)."""
    most = int(settings.MAX_PLAYGROUND_CHARS)
    return most if user.is_authenticated else most // 10
