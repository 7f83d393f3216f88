"""OTLP/HTTP on the wire (opentelemetry-proto docs/specification.md, "OTLP/HTTP"): a
trace or logs export request body, protobuf or JSON, gzip-compressed or not, read into the OTLP
JSON shape the mapping reads (a protobuf body's ids turned from bytes into hex, as OTLP
JSON writes them); answers encoded as the request was."""

from __future__ import annotations

import base64
import json
import math
import zlib
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

PROTOBUF, JSON = "application/x-protobuf", "application/json"
INVALID_ARGUMENT, UNAUTHENTICATED, RESOURCE_EXHAUSTED = 3, 16, 8  # google.rpc.Code
SHOWN_REASONS = 20


class Unsupported(ValueError):
    """A content type or encoding the receiver does not take (HTTP 415)."""


class Undecodable(ValueError):
    """A body that is not what its content type says (HTTP 400)."""


class TooBig(ValueError):
    """A body that inflates past the limit (HTTP 413)."""


def media_type(content_type: str) -> str:
    """The media type of a Content-Type header, lower case, without parameters."""
    return content_type.split(";")[0].strip().lower()


@dataclass(frozen=True, slots=True)
class Export:
    """An export request read: its OTLP JSON (`data`, ids in hex) and, for a protobuf
    body, each span as serialized there by (trace id, span id) in hex (`serialized`),
    which is cheaper to keep than the span written again as JSON."""

    data: Any
    serialized: dict[tuple[str, str], bytes] = field(default_factory=dict)


def export_of(body: bytes, content_type: str, encoding: str, limit: int) -> Export:
    """The export request of an ExportTraceServiceRequest body. Raises Unsupported for a
    content type other than protobuf or JSON or an encoding other than gzip or none,
    Undecodable for a body that cannot be read (saying why), TooBig when it inflates
    past `limit` bytes."""
    request = _request(body, content_type, encoding, limit, trace_service_pb2)
    if not isinstance(request, trace_service_pb2.ExportTraceServiceRequest):
        return Export(request)
    serialized: dict[tuple[str, str], bytes] = {}
    scopes = []
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            spans = []
            for span in scope.spans:
                ids = (span.trace_id.hex(), span.span_id.hex())
                serialized.setdefault(ids, span.SerializeToString())
                spans.append(span_json(span))
            scopes.append({"spans": spans})
    return Export({"resourceSpans": [{"scopeSpans": scopes}]}, serialized)


def logs_of(body: bytes, content_type: str, encoding: str, limit: int) -> Any:
    """The OTLP JSON (ids in hex) of an ExportLogsServiceRequest body; raises as
    export_of does."""
    request = _request(body, content_type, encoding, limit, logs_service_pb2)
    if not isinstance(request, logs_service_pb2.ExportLogsServiceRequest):
        return request
    resources = []
    for resource in request.resource_logs:
        scopes = [
            {"logRecords": [_log_json(r) for r in scope.log_records]}
            for scope in resource.scope_logs
        ]
        resources.append({"scopeLogs": scopes})
    return {"resourceLogs": resources}


def _request(body: bytes, content_type: str, encoding: str, limit: int, service: Any) -> Any:
    """A JSON body decoded, or a protobuf body as the service's export request."""
    kind = media_type(content_type)
    if kind not in (PROTOBUF, JSON):
        raise Unsupported(f"content type {kind or 'none'!r}: send {PROTOBUF} or {JSON}")
    raw = _inflated(body, encoding.strip().lower(), limit)
    if kind == JSON:
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise Undecodable(f"request body: invalid JSON ({exc})") from None
        except (RecursionError, ValueError):
            raise Undecodable("request body: JSON nested too deeply") from None
    message = (
        service.ExportTraceServiceRequest
        if service is trace_service_pb2
        else service.ExportLogsServiceRequest
    )
    try:
        return message.FromString(raw)
    except DecodeError as exc:
        raise Undecodable(f"request body: not an OTLP {message.__name__} ({exc})") from None


def _log_json(record: Any) -> dict[str, Any]:
    """A protobuf LogRecord as OTLP JSON writes it (ids in hex; the fields read)."""
    out = _present(
        {
            "traceId": record.trace_id.hex(),
            "spanId": record.span_id.hex(),
            "eventName": record.event_name,
            "timeUnixNano": _nanos(record.time_unix_nano),
            "observedTimeUnixNano": _nanos(record.observed_time_unix_nano),
            "attributes": [_pair(kv) for kv in record.attributes],
        }
    )
    if record.HasField("body"):  # an empty body set is written, as {}
        out["body"] = _any(record.body)
    return out


def span_json(span: Any) -> dict[str, Any]:
    """What the mapping reads of a protobuf Span (ids, times, attributes, events) as
    OTLP JSON writes it, ids in hex: json_format.MessageToDict's answer for those
    fields, without its walk of every field by reflection (a quarter of a batch)."""
    return _present(
        {
            "traceId": span.trace_id.hex(),
            "spanId": span.span_id.hex(),
            "parentSpanId": span.parent_span_id.hex(),
            "name": span.name,
            "startTimeUnixNano": _nanos(span.start_time_unix_nano),
            "endTimeUnixNano": _nanos(span.end_time_unix_nano),
            "attributes": [_pair(kv) for kv in span.attributes],
            "events": [_event(e) for e in span.events],
        }
    )


def _event(event: Any) -> dict[str, Any]:
    return _present(
        {
            "timeUnixNano": _nanos(event.time_unix_nano),
            "name": event.name,
            "attributes": [_pair(kv) for kv in event.attributes],
        }
    )


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields not at their default (proto3's JSON mapping leaves those out)."""
    return {key: value for key, value in fields.items() if value}


def _nanos(value: int) -> str:
    """A 64-bit time as proto3 JSON writes it (a string); '' for 0, left out."""
    return str(value) if value else ""


def _pair(kv: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"key": kv.key} if kv.key else {}
    if kv.HasField("value"):
        out["value"] = _any(kv.value)
    return out


def _any(value: Any) -> dict[str, Any]:
    """An AnyValue as proto3 JSON writes it (64-bit integers as strings, bytes in
    base64, non-finite doubles by name)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return {}
    if kind == "string_value":
        return {"stringValue": value.string_value}
    if kind == "int_value":
        return {"intValue": str(value.int_value)}
    if kind == "bool_value":
        return {"boolValue": value.bool_value}
    if kind == "double_value":
        number = value.double_value
        return {"doubleValue": number if math.isfinite(number) else NON_FINITE[str(number)]}
    if kind == "bytes_value":
        return {"bytesValue": base64.b64encode(value.bytes_value).decode()}
    listed = value.array_value if kind == "array_value" else value.kvlist_value
    name = "arrayValue" if kind == "array_value" else "kvlistValue"
    convert = _any if kind == "array_value" else _pair
    return {name: {"values": [convert(v) for v in listed.values]} if listed.values else {}}


NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _inflated(body: bytes, encoding: str, limit: int) -> bytes:
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise Unsupported(f"content encoding {encoding!r}: send gzip or none")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        raw = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise Undecodable(f"request body: not gzip ({exc})") from None
    if len(raw) > limit:
        raise TooBig(f"request body: over {limit:,} bytes once inflated; send smaller batches")
    if not inflater.eof:
        raise Undecodable("request body: gzip stream cut short")
    return raw


PACKED_PROTOBUF, PACKED_JSON = "protobuf", "json"


def packed(span: Any, serialized: bytes | None) -> tuple[str, bytes]:
    """A span to keep, compressed: as serialized in a protobuf body when given, else
    its OTLP JSON (ids in hex). Returns (how it is packed, the bytes). Instrumentations
    send the whole history with every call, so a conversation's spans repeat each
    other; compressed, they take a twentieth of the space and time to write."""
    if serialized is not None:
        return PACKED_PROTOBUF, zlib.compress(serialized, 1)
    text = json.dumps(span, separators=(",", ":"), ensure_ascii=False)
    return PACKED_JSON, zlib.compress(text.encode(), 1)


def unpacked(how: str, body: bytes) -> Any:
    """The OTLP JSON (ids in hex) of a span kept by `packed`: of one kept as protobuf,
    what the mapping reads (span_json)."""
    raw = zlib.decompress(body)
    if how == PACKED_PROTOBUF:
        return span_json(trace_pb2.Span.FromString(raw))
    return json.loads(raw)


def success(kind: str, rejected: tuple[str, ...], logs: bool = False) -> bytes:
    """An ExportTraceServiceResponse (with `logs`, an ExportLogsServiceResponse):
    partial_success names the rejected spans or log records and why (left unset when
    none was, as the specification asks)."""
    said = ""
    if rejected:
        more = len(rejected) - SHOWN_REASONS
        said = "; ".join(rejected[:SHOWN_REASONS]) + (f"; and {more} more" if more > 0 else "")
    if logs:
        answer = logs_service_pb2.ExportLogsServiceResponse()
        if rejected:
            answer.partial_success.rejected_log_records = len(rejected)
            answer.partial_success.error_message = said
        return _encoded(kind, answer)
    response = trace_service_pb2.ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = len(rejected)
        response.partial_success.error_message = said
    return _encoded(kind, response)


def status(kind: str, code: int, message: str) -> bytes:
    """A google.rpc.Status, the body of an OTLP/HTTP error answer."""
    return _encoded(kind, status_pb2.Status(code=code, message=message))


def _encoded(kind: str, message: Any) -> bytes:
    if media_type(kind) == PROTOBUF:
        data: bytes = message.SerializeToString()
        return data
    text: str = json_format.MessageToJson(message, indent=None)
    return text.encode()
