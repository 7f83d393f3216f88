"""OTLP/HTTP on the wire (opentelemetry-proto docs/specification.md, "OTLP/HTTP"): a
trace export request body, protobuf or JSON, gzip-compressed or not, read into the OTLP
JSON shape the mapping reads (a protobuf body's ids turned from bytes into hex, as OTLP
JSON writes them); answers encoded as the request was."""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

PROTOBUF, JSON = "application/x-protobuf", "application/json"
ID_KEYS = ("traceId", "spanId", "parentSpanId")
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
    kind = media_type(content_type)
    if kind not in (PROTOBUF, JSON):
        raise Unsupported(f"content type {kind or 'none'!r}: send {PROTOBUF} or {JSON}")
    raw = _inflated(body, encoding.strip().lower(), limit)
    if kind == JSON:
        try:
            return Export(json.loads(raw))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise Undecodable(f"request body: invalid JSON ({exc})") from None
        except (RecursionError, ValueError):
            raise Undecodable("request body: JSON nested too deeply") from None
    try:
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(raw)
    except DecodeError as exc:
        raise Undecodable(f"request body: not an OTLP ExportTraceServiceRequest ({exc})") from None
    serialized: dict[tuple[str, str], bytes] = {}
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                ids = (span.trace_id.hex(), span.span_id.hex())
                serialized.setdefault(ids, span.SerializeToString())
    return Export(_hex_ids(json_format.MessageToDict(request)), serialized)


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


def _hex_ids(export: dict[str, Any]) -> dict[str, Any]:
    """`export` with the span and link ids of the proto3 JSON mapping (base64) in hex."""
    for resource in export.get("resourceSpans", ()):
        for scope in resource.get("scopeSpans", ()):
            for span in scope.get("spans", ()):
                _hex_ids_of(span)
    return export


def _hex(item: dict[str, Any]) -> None:
    for key in ID_KEYS:
        if key in item:  # MessageToDict writes bytes as base64, always valid
            item[key] = base64.b64decode(item[key]).hex()


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
    """The OTLP JSON (ids in hex) of a span kept by `packed`."""
    raw = zlib.decompress(body)
    if how == PACKED_PROTOBUF:
        return _hex_ids_of(json_format.MessageToDict(trace_pb2.Span.FromString(raw)))
    return json.loads(raw)


def _hex_ids_of(span: dict[str, Any]) -> dict[str, Any]:
    _hex(span)
    for link in span.get("links", ()):
        _hex(link)
    return span


def success(kind: str, rejected: tuple[str, ...]) -> bytes:
    """An ExportTraceServiceResponse: partial_success names the rejected spans and why
    (left unset when none was, as the specification asks)."""
    response = trace_service_pb2.ExportTraceServiceResponse()
    if rejected:
        shown = "; ".join(rejected[:SHOWN_REASONS])
        more = len(rejected) - SHOWN_REASONS
        response.partial_success.rejected_spans = len(rejected)
        response.partial_success.error_message = shown + (f"; and {more} more" if more > 0 else "")
    return _encoded(kind, response)


def status(kind: str, code: int, message: str) -> bytes:
    """A google.rpc.Status, the body of an OTLP/HTTP error answer."""
    return _encoded(kind, status_pb2.Status(code=code, message=message))


def _encoded(kind: str, message: Any) -> bytes:
    if media_type(kind) == PROTOBUF:
        data: bytes = message.SerializeToString()
        return data
    return json_format.MessageToJson(message, indent=None).encode()
