"""Fitting a `custom` estimator on a run's measured usage, and keeping it."""

from __future__ import annotations

from django.contrib.auth.models import User

from contextsim.counting.estimators import ESTIMATORS, count_message
from contextsim.counting.fitting import CustomEstimator, fit_rates, mean_abs_error
from contextsim.model import Run as CoreRun
from contextsim.model import steps
from webapp.models import CustomRates, Run
from webapp.store.reads import stored_run


def _errors(run: CoreRun, estimator: object) -> float:
    totals = [0]
    for message in run.messages:
        totals.append(totals[-1] + count_message(message, estimator))  # type: ignore[arg-type]
    measured = [(totals[s.end], s.usage.context) for s in steps(run) if s.usage is not None]
    return mean_abs_error([e for e, _ in measured], [m for _, m in measured])


def fit_from_run(run: Run, owner: User | None) -> CustomRates:
    """Fit rates on `run`, save them for `owner` with every estimator's error before
    and the fitted one's after (mean absolute share of the measured usage). Raises
    ValueError when the run has too few measured requests."""
    core = stored_run(run)
    rates = fit_rates(core)
    saved = CustomRates(
        owner=owner,
        label=f"fitted on {run.title[:200]} (+{rates.overhead:,} unlogged tokens per request)",
        rates=rates.per_char,
        source_run=run,
    )
    estimator = CustomEstimator(saved.estimator_name, rates)
    saved.error_before = {name: _errors(core, est) for name, est in ESTIMATORS.items()}
    saved.error_after = _errors(core, estimator)
    saved.requests = sum(1 for s in steps(core) if s.usage is not None)
    saved.save()
    return saved
