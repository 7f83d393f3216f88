"""GenAI message events received over OTLP/HTTP as log records (``POST /v1/logs``):
instrumentations that follow the conventions before v1.37, such as
opentelemetry-instrumentation-openai-v2 by default, put the messages there and leave
the model call span without them. Each event is kept for its span; a span stored
already is read again with it and its conversation's run brought in step."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from contextsim.formats.otel import BODY
from contextsim.formats.otel_events import log_events
from webapp.services import span_events
from webapp.services.spans import Receipt, lock_owner, resync


def receive_logs(owner: AbstractBaseUser, export: Any) -> Receipt:
    """Keep the GenAI events of an OTLP JSON logs export (ids in hex) for `owner`
    and bring in step the runs whose stored spans they belong to, in one transaction.
    Records of anything else are skipped; a GenAI record that names no span is
    rejected (named in the receipt). Raises FormatError when `export` is not a logs
    export at all. `Receipt.stored` counts the spans that gained an event."""
    rejected: list[str] = []
    found = list(log_events(BODY, export, rejected))
    with transaction.atomic():
        lock_owner(owner)
        gained = span_events.store(owner, found)
        runs = resync(owner, gained) if gained else []
    return Receipt(len(gained), tuple(rejected), tuple(runs))
