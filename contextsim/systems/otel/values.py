"""Reading OTLP JSON spans: attributes (AnyValue decoded), span events and times, with
the JSON path of each, for the OpenTelemetry mappings (otel, otel_openinference,
otel_events).

OTLP JSON (opentelemetry-proto, docs/specification.md "JSON Protobuf Encoding"): keys
in lowerCamelCase, trace and span ids as hex, 64-bit integers (``intValue``,
``startTimeUnixNano``) as decimal strings or numbers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from contextsim.ingest.base import FormatError, expect, parse_time


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """One event of a span: its name, decoded attributes and time (seconds, or None)."""

    name: str
    where: str
    values: dict[str, Any]
    time: float | None = None


@dataclass(frozen=True, slots=True)
class Attrs:
    """A span's decoded attributes and events, and where the span is in the file."""

    path: str
    where: str
    values: dict[str, Any]
    start: float | None = None
    """The span's start and end (seconds since the epoch), if it has them."""
    end: float | None = None
    events: tuple[SpanEvent, ...] = ()

    def at(self, key: str) -> str:
        return f"{self.where}.attributes['{key}']"


def span_attrs(path: str, where: str, span: dict[str, Any]) -> Attrs:
    """The attributes, events and times of the OTLP JSON span `span` found at `where`;
    FormatError naming the JSON path of a malformed attribute or event."""
    events = tuple(
        SpanEvent(
            str(expect(path, f"{at}.name", event.get("name"), str, "the event's name string")),
            at,
            pairs(path, f"{at}.attributes", event.get("attributes")),
            nanos(event.get("timeUnixNano")),
        )
        for at, event in items(path, f"{where}.events", span.get("events"))
    )
    values = pairs(path, f"{where}.attributes", span.get("attributes"))
    start, end = nanos(span.get("startTimeUnixNano")), nanos(span.get("endTimeUnixNano"))
    return Attrs(path, where, values, start, end, events)


def start_nanos(span: dict[str, Any]) -> int:
    """The span's start in nanoseconds since the epoch (0 when absent or not a number)."""
    text = str(span.get("startTimeUnixNano"))
    return int(text) if _digits(text) else 0


def nanos(value: Any) -> float | None:
    """An OTLP time (nanoseconds since the epoch, as a number or its text) in seconds."""
    text = str(value)
    return parse_time(int(text)) if _digits(text) else None


def _digits(text: str) -> bool:
    """Whether `text` is a whole number int() reads (str.isdigit alone takes "²")."""
    return text.isascii() and text.isdigit()


def items(path: str, where: str, value: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """The objects of the list `value` (absent: none), each with its JSON path."""
    for i, item in enumerate(() if value is None else expect(path, where, value, list, "a list")):
        yield f"{where}[{i}]", expect(path, f"{where}[{i}]", item, dict, "an object")


def pairs(path: str, where: str, value: Any) -> dict[str, Any]:
    """OTLP key-value pairs (attributes, a kvlist) as a dict of decoded values."""
    found = {}
    for at, item in items(path, where, value):
        key = expect(path, f"{at}.key", item.get("key"), str, "the attribute's key string")
        found[key] = any_value(path, f"{at}.value", item.get("value"))
    return found


def any_value(path: str, where: str, data: Any) -> Any:
    """An OTLP AnyValue as a plain value (arrays, kvlists and int64 strings decoded; an
    empty one None). Scalars are taken as written: their types are checked in use."""
    expect(path, where, data, dict, "an OTLP AnyValue object")
    for kind, value in data.items():
        at = f"{where}.{kind}"
        if kind in ("arrayValue", "kvlistValue"):
            values = expect(path, at, value, dict, "an object with 'values'").get("values")
            if kind == "kvlistValue":
                return pairs(path, f"{at}.values", values)
            return [any_value(path, w, v) for w, v in items(path, f"{at}.values", values)]
        is_int = kind == "intValue" and isinstance(value, str) and value.lstrip("-").isdigit()
        return int(value) if is_int else value
    return None


def decoded(value: Any) -> Any:
    """A structured value as is; JSON text parsed (text that is not JSON as is)."""
    with suppress(ValueError):
        return json.loads(value) if isinstance(value, str) else value
    return value


def token_attribute(attrs: Attrs, keys: tuple[str, ...]) -> int | None:
    """The first of the attributes `keys` present, as a count of tokens (digit strings
    accepted); None when none is present."""
    for key in keys:
        value = attrs.values.get(key)
        value = int(value) if isinstance(value, str) and value.isdigit() else value
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        if value is not None:
            problem = f"expected a whole number of tokens >= 0, found {value!r}"
            raise FormatError(attrs.path, attrs.at(key), problem)
    return None


def indexed(values: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened list attributes ``{prefix}.{i}.{field}`` as one dict of fields per item,
    i = 0, 1, ... up to the first index missing. One pass over the keys, so a long
    history costs no more than its attributes."""
    head, found = f"{prefix}.", dict[int, dict[str, Any]]()
    for key, value in values.items():
        if key.startswith(head):
            index, _, field = key[len(head) :].partition(".")
            if index.isdigit() and field:
                found.setdefault(int(index), {})[field] = value
    return [found[i] for i in range(_run_length(found))]


def _run_length(found: dict[int, Any]) -> int:
    n = 0
    while n in found:
        n += 1
    return n
