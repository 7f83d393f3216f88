"""Comparing estimators on a stored run: computed once per reference and kept."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from contextsim.estimator_report import compare_text, run_text
from contextsim.estimators import ESTIMATORS
from webapp.models import EstimatorReport, Run
from webapp.services.skeletons import stored_run


def estimator_report(run: Run, reference: str) -> dict[str, Any]:
    """The run's comparison by script (see contextsim.estimator_report.compare_text)."""
    found = EstimatorReport.objects.filter(run=run, reference=reference).first()
    if found is not None and set(ESTIMATORS) <= set(found.data["total"]):
        data: dict[str, Any] = found.data
        return data
    data = compare_text(run_text(stored_run(run)), reference)
    if found is not None:
        # An estimator was added since: the stored comparison lacks it.
        EstimatorReport.objects.filter(pk=found.pk).update(data=data)
        return data
    try:
        with transaction.atomic():
            EstimatorReport.objects.create(run=run, reference=reference, data=data)
    except IntegrityError:
        pass  # computed at the same time by another request
    return data
