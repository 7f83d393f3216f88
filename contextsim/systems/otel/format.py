"""OpenTelemetry GenAI spans as OTLP JSON files: the importer (the mapping of spans to
calls and runs is contextsim.systems.otel.spans), and a big export read a span at a
time, never held whole.

An export's spans each carry every input message of their call, so the document is
mostly the same conversation written again and again: parsed whole, a 127 MB export
took 774 MB. Here it is read twice, a span at a time (json_stream):

1. what decides each call's run and its place in it: its ids, the conversation it or
   an ancestor names, its trace and start. A run takes the conversation its call's
   nearest ancestor names, and a parent span is often written after its children, so
   no call can be placed before the whole export has been seen;
2. each model call, added to its run's Conversation in start order as it comes (a call
   that comes before an earlier-starting one of its run waits for it), then let go.

The runs, their calls and their warnings are those `OTelImporter.parse` makes of the
export loaded whole (contextsim.systems.otel.spans).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from itertools import chain
from typing import Any

from contextsim.ingest.base import (
    Document,
    FileEnd,
    FormatError,
    LazyDocument,
    Lines,
    ParsedFile,
    RunPiece,
    Source,
    expect,
    whole_pieces,
    with_source_warnings,
)
from contextsim.model import Run
from contextsim.systems.otel.spans import (
    FORMAT,
    Conversation,
    SpanCall,
    export_calls,
    group_of,
    is_call,
    named_by,
    named_on,
    runs_from,
    span_call,
    spans_of,
)
from contextsim.systems.otel.values import span_attrs, start_nanos

SPANS = ("resourceSpans", "*", "scopeSpans", "*", "spans")
"""The arrays whose elements are read one at a time (json_stream.Pattern)."""

_Call = tuple[int, str, str, int, str, str | None]
"""A model call as the first reading notes it: (span number, trace id, span id, start
in ns, parent span id, the conversation the span names)."""
_Family = dict[str, tuple[str, str | None]]
"""Span id -> (parent span id, the conversation the span names)."""


class OTelImporter:
    """OTLP JSON traces with GenAI spans (see the module docstring)."""

    name = FORMAT
    label = "OpenTelemetry GenAI spans (OTLP JSON traces)"
    document_head = re.compile(r'\s*\{\s*"resourceSpans"\s*:')

    def sniff(self, source: Source) -> bool:
        """True when the document, or the first JSONL record, has ``resourceSpans``."""
        first = source.data if isinstance(source, Document) else source.sample[0].data
        return isinstance(first, dict) and isinstance(first.get("resourceSpans"), list)

    def parse(self, source: Source) -> ParsedFile:
        """One run per conversation (else trace) with model calls; FormatError naming a
        wrong value's path."""
        lines = source if isinstance(source, Lines) else ()
        exports = [("$", source.data)] if isinstance(source, Document) else []
        found = chain(exports, ((f"line {r.line}, $", r.data) for r in lines))
        calls = [c for root, export in found for c in export_calls(source.path, root, export, None)]
        if not calls:
            raise FormatError(source.path, "$", "expected GenAI model call spans, found none")
        warnings = list(source.warnings) if isinstance(source, Lines) else []
        return ParsedFile(self.name, runs_from(source.path, calls, warnings), tuple(warnings))

    def document_pieces(
        self, source: LazyDocument, claims: Callable[[Source], bool]
    ) -> Iterator[RunPiece | FileEnd] | None:
        """A big export read a span at a time (read_document), handed over as parsed;
        None when it is not one to read so."""
        parsed = read_document(source, claims)
        return None if parsed is None else whole_pieces(with_source_warnings(parsed, source))


def read_document(source: LazyDocument, claimed: Callable[[Document], bool]) -> ParsedFile | None:
    """The runs of a big OTLP JSON export, read a span at a time, as OTelImporter.parse
    gives them (the warnings of rebuilding its runs; reading the document's are in
    `source.warnings`); None when the document is not one to read so (its spans are
    not where an export has them, a key on their way repeats, it has a fault that
    loading it whole may name another of, or `claimed`, asked of what is left of it
    once its spans are taken out, says it is not the OTel importer's): the caller
    loads it whole. FormatError as for the export loaded whole."""
    found = _first_reading(source, claimed)
    if found is None:
        return None
    calls, family = found
    said = len(source.warnings)
    runs, rebuilt = _second_reading(source, calls, family)
    del source.warnings[said:]  # the second reading said them again
    return ParsedFile(OTelImporter.name, runs, tuple(rebuilt))


def _where(at: tuple[str | int, ...]) -> str:
    return f"$.resourceSpans[{at[1]}].scopeSpans[{at[3]}].spans[{at[5]}]"


def _first_reading(
    source: LazyDocument, claimed: Callable[[Document], bool]
) -> tuple[list[_Call], _Family] | None:
    path = source.path
    calls: list[_Call] = []
    family: _Family = {}
    document: Any = None
    try:
        for number, (at, span) in enumerate(source.elements(SPANS)):
            if not at:
                document = span
                break
            _note(path, _where(at), number, span, calls, family)
        # What is left once the spans were taken out: whether the OTel importer takes
        # it, and its shape as loading it whole checks it; a span still in it means
        # its arrays were not where they are looked for.
        if not claimed(Document(path, document)) or any(spans_of(path, "$", document)):
            return None
    except Exception:
        # Loaded whole, the file says which of its faults comes first (a span's
        # messages are read only in the second reading), or it is another importer's,
        # which need not read its spans.
        return None
    if not calls:
        raise FormatError(path, "$", "expected GenAI model call spans, found none")
    return calls, family


def _note(
    path: str, where: str, number: int, span: Any, calls: list[_Call], family: _Family
) -> None:
    """Note what the span adds to `family`, and in `calls` if it is a model call's;
    FormatError as otel._calls and span_call check it, in the same order."""
    expect(path, where, span, dict, "an object")
    own, span_id = named_on(span), str(span.get("spanId") or "")
    parent = str(span.get("parentSpanId") or "")
    if span_id:
        family[span_id] = (parent, own)
    trace = expect(path, f"{where}.traceId", span.get("traceId"), str, "a string")
    attrs = span_attrs(path, where, span)
    if is_call(attrs):
        calls.append((number, trace, span_id, start_nanos(span), parent, named_by(attrs)))


def _second_reading(
    source: LazyDocument, calls: list[_Call], family: _Family
) -> tuple[tuple[Run, ...], list[str]]:
    """Each run (in the order its first call was written) and what rebuilding them
    said, as otel.runs_from makes them."""
    groups: dict[str, list[_Call]] = {}
    for call in calls:
        number, trace, _, _, parent, own = call
        groups.setdefault(group_of(own, trace, parent, family), []).append(call)
    # Judged by the first call written, as otel._run judges it (before sorting).
    conversations = {g: Conversation(g, members[0][1] == g) for g, members in groups.items()}
    place: dict[int, tuple[str, int]] = {}
    for group, members in groups.items():
        members.sort(key=lambda c: c[3])  # start order, ties as written (sort is stable)
        for rank, member in enumerate(members):
            place[member[0]] = (group, rank)
    waiting: dict[str, dict[int, SpanCall]] = {g: {} for g in groups}
    added = dict.fromkeys(groups, 0)
    for number, (at, span) in enumerate(source.elements(SPANS)):
        if not at:
            break
        if number in place:
            group, rank = place[number]
            read = span_call(source.path, _where(at), span)
            assert read is not None  # the first reading found it a call
            waiting[group][rank] = replace(read, data=None)  # not kept: let the span go
            while added[group] in waiting[group]:
                conversations[group].add(waiting[group].pop(added[group]))
                added[group] += 1
    said: list[str] = []
    return tuple(c.run(source.path, said) for c in conversations.values()), said
