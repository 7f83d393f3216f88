"""Reads of what the capture proxy kept beside a run's messages: the calls made for a
request (its parameters, the upstream's status and error, its timing)."""

from __future__ import annotations

import json
from typing import Any

from webapp.models import CapturedCall, Run


def calls_of(run: Run, step: int) -> list[dict[str, Any]]:
    """The captured calls of request `step` of `run`, oldest first (a failed call and
    its retry are both there), with their parameters as indented JSON text."""
    found = CapturedCall.objects.filter(run=run, step=step).order_by("started", "id")
    return [
        {
            "call": call,
            "params": json.dumps(call.params, indent=1, ensure_ascii=False, sort_keys=True),
        }
        for call in found
    ]
