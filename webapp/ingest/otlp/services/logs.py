"""GenAI message events received over OTLP/HTTP as log records (``POST /v1/logs``):
instrumentations that follow the conventions before v1.37, such as
opentelemetry-instrumentation-openai-v2 by default, put the messages there and leave
the model call span without them. Each event is kept for its span; a span stored
already is read again with it and its conversation's run brought in step."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from contextsim.ingest.base import FormatError
from contextsim.systems.otel.events import DETAILS, log_events
from contextsim.systems.otel.spans import BODY, span_call
from webapp.ingest.otlp.services import events as span_events
from webapp.ingest.otlp.services import follow as follow
from webapp.ingest.otlp.services.receiving import Receipt, lock_owner, resync


def receive_logs(owner: User, export: Any) -> Receipt:
    """Keep the GenAI events of an OTLP JSON logs export (ids in hex) for `owner`
    and bring in step the runs whose stored spans they belong to, in one transaction.
    Records of anything else are skipped; a GenAI record that names no span is
    rejected (named in the receipt). Raises FormatError when `export` is not a logs
    export at all. `Receipt.stored` counts the spans that gained an event."""
    rejected: list[str] = []
    found = []
    for trace, span, event in log_events(BODY, export, rejected):
        problem = _unreadable(trace, span, event)
        if problem:
            rejected.append(problem)
        else:
            found.append((trace, span, event))
    try:
        with transaction.atomic():
            lock_owner(owner)
            gained = span_events.store(owner, found)
            runs = resync(owner, gained) if gained else []
    except BaseException:
        # What this process followed may be ahead of what the rollback leaves stored.
        for place in [p for p in follow.FOLLOWED if p[0] == owner.pk]:
            follow.FOLLOWED.pop(place, None)
        raise
    return Receipt(len(gained), tuple(rejected), tuple(runs))


def _unreadable(trace: str, span: str, event: dict[str, Any]) -> str:
    """Why the event cannot be read as part of a model call span ('' when it can): a
    bad one is rejected now, not found wanting each time its span is read."""
    chat = {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}
    probe: dict[str, Any] = {"traceId": trace, "spanId": span}
    if event.get("name") == DETAILS:
        probe["attributes"] = [chat, *event.get("attributes", [])]
    else:
        probe |= {"attributes": [chat], "events": [event]}
    try:
        span_call(BODY, "$", probe)
    except FormatError as error:
        where = error.where.replace("$.events[0]", "event").replace("$", "event")
        return f"log record of span {span}: {where}: {error.problem}"
    return ""
