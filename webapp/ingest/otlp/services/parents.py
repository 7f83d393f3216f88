"""Model calls whose spans name no conversation, joined to the one their parent span
names (an agent's invoke span), whichever arrives first. Within one export the mapping
does it (contextsim.systems.otel.spans); across exports the parent ends after its calls, so
it usually arrives after them: the spans that name a conversation are kept
(NamedSpan), a call received later joins its parent's, and calls received before are
moved from their trace's run to the conversation's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from django.contrib.auth.models import User
from django.db.models import F

from contextsim.systems.otel.spans import SpanCall
from webapp.ingest.otlp.services.groups import CHUNK, KEY_CHARS, SPAN_ID, TRACE_ID
from webapp.models import NamedSpan, ReceivedSpan, SpanGroup


def joined(owner: User, calls: Sequence[SpanCall]) -> list[SpanCall]:
    """`calls`, each that names no conversation and found none in its export put in
    the one its parent named when received before."""
    orphans = [c for c in calls if not c.own_group and c.group == c.trace_id and c.parent]
    if not orphans:
        return list(calls)
    names = _names(owner, {(c.trace_id, c.parent) for c in orphans})
    return [
        replace(c, group=names[c.trace_id, c.parent])
        if not c.own_group and (c.trace_id, c.parent) in names
        else c
        for c in calls
    ]


def adopt(owner: User, named: Sequence[tuple[str, str, str]]) -> set[str]:
    """Keep the spans that name a conversation ((trace id, span id, conversation));
    move the calls stored in their trace's group whose parent is one of them to its
    conversation's group. Returns the keys of the groups that changed (in the caller's
    transaction, holding the owner's lock)."""
    fit = [
        (t, s, c)
        for t, s, c in named
        if len(c) <= KEY_CHARS and TRACE_ID.fullmatch(t) and SPAN_ID.fullmatch(s)
    ]
    if not fit:
        return set()
    NamedSpan.objects.bulk_create(
        [NamedSpan(owner=owner, trace_id=t, span_id=s, conversation=c) for t, s, c in fit],
        ignore_conflicts=True,
        batch_size=CHUNK,
    )
    changed: set[str] = set()
    parents = {(t, s): c for t, s, c in fit}
    traces = sorted({t for t, _, _ in fit})
    for first in range(0, len(traces), CHUNK):
        chunk = traces[first : first + CHUNK]
        stray = ReceivedSpan.objects.filter(owner=owner, trace_id__in=chunk).exclude(parent_id="")
        moves: dict[str, list[int]] = {}
        for pk, trace, parent, key in stray.values_list(
            "pk", "trace_id", "parent_id", "group__key"
        ):
            conversation = parents.get((trace, parent))
            if conversation is not None and key == trace:
                moves.setdefault(conversation, []).append(pk)
                changed |= {trace, conversation}
        for conversation, ids in moves.items():
            group, _ = SpanGroup.objects.get_or_create(owner=owner, key=conversation)
            ReceivedSpan.objects.filter(pk__in=ids).update(group=group)
    # What any process followed of these groups is stale: their stored calls changed.
    SpanGroup.objects.filter(owner=owner, key__in=changed).update(version=F("version") + 1)
    return changed


def _names(owner: User, ids: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    traces = sorted({t for t, _ in ids})
    found: dict[tuple[str, str], str] = {}
    for first in range(0, len(traces), CHUNK):
        rows = NamedSpan.objects.filter(owner=owner, trace_id__in=traces[first : first + CHUNK])
        for trace, span, conversation in rows.values_list("trace_id", "span_id", "conversation"):
            if (trace, span) in ids:
                found[trace, span] = conversation
    return found
