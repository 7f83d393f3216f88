"""GenAI message events that arrived as log records (the logs signal), kept until and
after their spans arrive, and joined to them: a span's call is read with the events
recorded on it and those received for it (contextsim.systems.otel.events)."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User

from contextsim.systems.otel.events import DETAILS
from webapp.ingest.otlp.services.groups import CHUNK
from webapp.models import ReceivedEvent

Ids = tuple[str, str]
"""A span's (trace id, span id), in hex."""


def store(owner: User, found: Iterable[tuple[str, str, dict[str, Any]]]) -> set[Ids]:
    """Keep each (trace id, span id, span event) of one export, in its order, not kept
    before for `owner` (in the caller's transaction); returns the spans that gained
    an event."""
    rows: dict[str, ReceivedEvent] = {}
    # Its place in the export too: two alike records of one call (a user who said
    # "yes" twice, on a coarse clock) are two messages; a retry resends the batch.
    for position, (trace, span, event) in enumerate(found):
        text = json.dumps([trace, span, event, position], sort_keys=True, ensure_ascii=False)
        digest = hashlib.sha256(text.encode()).hexdigest()
        rows.setdefault(
            digest,
            ReceivedEvent(owner=owner, trace_id=trace, span_id=span, event=event, digest=digest),
        )
    digests = sorted(rows)
    for first in range(0, len(digests), CHUNK):
        kept = ReceivedEvent.objects.filter(owner=owner, digest__in=digests[first : first + CHUNK])
        for digest in kept.values_list("digest", flat=True):
            del rows[digest]
    ReceivedEvent.objects.bulk_create(rows.values(), ignore_conflicts=True, batch_size=CHUNK)
    return {(r.trace_id, r.span_id) for r in rows.values()}


def events_of(owner: User, ids: set[Ids]) -> dict[Ids, list[dict[str, Any]]]:
    """The events kept for each of the spans `ids` that has any, in the order they
    were received."""
    traces = sorted({t for t, _ in ids})
    found: dict[Ids, list[dict[str, Any]]] = defaultdict(list)
    for first in range(0, len(traces), CHUNK):
        rows = ReceivedEvent.objects.filter(owner=owner, trace_id__in=traces[first : first + CHUNK])
        for trace, span, event in rows.order_by("pk").values_list("trace_id", "span_id", "event"):
            if (trace, span) in ids:
                found[trace, span].append(event)
    return found


def joined(span: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """`span` (OTLP JSON) with `events` among its own, all in time order (ties in the
    order given, the span's own first), an event it holds already not added again; a
    DETAILS event's attributes added to the span's where it has none of that name.
    `span` itself is not changed."""
    own = _list(span.get("events"))
    added = [e for e in events if e.get("name") != DETAILS and e not in own]
    attributes = _list(span.get("attributes"))
    names = {a.get("key") for a in attributes if isinstance(a, dict)}
    extra = []
    for event in events:
        if event.get("name") == DETAILS:
            for pair in _list(event.get("attributes")):
                if isinstance(pair, dict) and pair.get("key") not in names:
                    names.add(pair.get("key"))
                    extra.append(pair)
    if not added and not extra:
        return span
    out = {**span, "attributes": [*attributes, *extra]}
    if added:
        out["events"] = sorted([*own, *added], key=_nanos)
    return out


def span_ids(export: Any) -> set[Ids]:
    """The (trace id, span id) of every span of an OTLP JSON traces export, read
    leniently (the mapping names what is malformed)."""
    found: set[Ids] = set()
    for span in _spans(export):
        trace, span_id = span.get("traceId"), span.get("spanId")
        if isinstance(trace, str) and isinstance(span_id, str):
            found.add((trace, span_id))
    return found


def with_events(export: Any, events: dict[Ids, list[dict[str, Any]]]) -> Any:
    """`export` with each span that has `events` joined to them (a new export; the
    spans without are the same objects)."""
    if not events or not isinstance(export, dict):
        return export
    resources = []
    for resource in _list(export.get("resourceSpans")):
        scopes = []
        for scope in _list(resource.get("scopeSpans") if isinstance(resource, dict) else None):
            if not isinstance(scope, dict):
                scopes.append(scope)
                continue
            spans = [_joined_one(s, events) for s in _list(scope.get("spans"))]
            scopes.append({**scope, "spans": spans})
        resources.append(
            {**resource, "scopeSpans": scopes} if isinstance(resource, dict) else resource
        )
    return {**export, "resourceSpans": resources}


def _joined_one(span: Any, events: dict[Ids, list[dict[str, Any]]]) -> Any:
    if not isinstance(span, dict):
        return span
    found = events.get((span.get("traceId"), span.get("spanId")))  # type: ignore[arg-type]
    return joined(span, found) if found else span


def _spans(export: Any) -> list[dict[str, Any]]:
    if not isinstance(export, dict):
        return []
    return [
        span
        for resource in _list(export.get("resourceSpans"))
        if isinstance(resource, dict)
        for scope in _list(resource.get("scopeSpans"))
        if isinstance(scope, dict)
        for span in _list(scope.get("spans"))
        if isinstance(span, dict)
    ]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _nanos(event: Any) -> int:
    text = str(event.get("timeUnixNano", "0")) if isinstance(event, dict) else "0"
    return int(text) if text.isdigit() else 0
