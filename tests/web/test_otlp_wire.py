"""Reading a protobuf export body: the receiver's own reading of each span
(otlp_wire.span_json) is what protobuf's json_format.MessageToDict writes for the
fields the mapping reads, ids turned from base64 into hex, on random spans of every
attribute value kind."""

from __future__ import annotations

import base64
import math
from typing import Any

from google.protobuf import json_format
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from webapp.ingest.otlp import wire as wire

READ = ("traceId", "spanId", "parentSpanId", "name", "startTimeUnixNano", "endTimeUnixNano")

texts = st.text(max_size=12)
leaves = st.one_of(
    st.builds(lambda v: common_pb2.AnyValue(string_value=v), texts),
    st.builds(lambda v: common_pb2.AnyValue(bool_value=v), st.booleans()),
    st.builds(lambda v: common_pb2.AnyValue(int_value=v), st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda v: common_pb2.AnyValue(double_value=v), st.floats()),
    st.builds(lambda v: common_pb2.AnyValue(bytes_value=v), st.binary(max_size=8)),
    st.just(common_pb2.AnyValue()),
)


def _pairs(values: Any) -> Any:
    return st.lists(
        st.tuples(texts, values, st.booleans()).map(
            lambda t: (
                common_pb2.KeyValue(key=t[0], value=t[1]) if t[2] else common_pb2.KeyValue(key=t[0])
            )
        ),
        max_size=3,
    )


values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(
            lambda vs: common_pb2.AnyValue(array_value=common_pb2.ArrayValue(values=vs))
        ),
        _pairs(inner).map(
            lambda kvs: common_pb2.AnyValue(kvlist_value=common_pb2.KeyValueList(values=kvs))
        ),
    ),
    max_leaves=8,
)


@st.composite
def spans(draw: st.DrawFn) -> trace_pb2.Span:
    ids = st.binary(min_size=0, max_size=16)
    events = st.lists(
        st.builds(
            lambda t, n, a: trace_pb2.Span.Event(time_unix_nano=t, name=n, attributes=a),
            st.integers(0, 2**64 - 1),
            texts,
            _pairs(values),
        ),
        max_size=2,
    )
    return trace_pb2.Span(
        trace_id=draw(ids),
        span_id=draw(ids),
        parent_span_id=draw(ids),
        name=draw(texts),
        kind=draw(st.integers(0, 5)),
        start_time_unix_nano=draw(st.integers(0, 2**64 - 1)),
        end_time_unix_nano=draw(st.integers(0, 2**64 - 1)),
        attributes=draw(_pairs(values)),
        events=draw(events),
    )


def _oracle(span: trace_pb2.Span) -> dict[str, Any]:
    written = json_format.MessageToDict(span)
    for key in ("traceId", "spanId", "parentSpanId"):
        if key in written:
            written[key] = base64.b64decode(written[key]).hex()
    return {k: v for k, v in written.items() if k in (*READ, "attributes", "events")}


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN (MessageToDict and span_json both write "NaN")."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@given(span=spans())
def test_a_span_is_read_as_protobufs_json_mapping_writes_it(span):
    assert _same(wire.span_json(span), _oracle(span))


@given(batch=st.lists(spans(), min_size=1, max_size=4))
def test_a_body_is_read_span_by_span_and_each_span_kept_as_it_was_serialized(batch):
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.extend(batch)
    export = wire.export_of(request.SerializeToString(), wire.PROTOBUF, "", 10**7)
    read = export.data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert all(_same(r, _oracle(s)) for r, s in zip(read, batch, strict=True))
    for span in batch:
        kept = export.serialized[(span.trace_id.hex(), span.span_id.hex())]
        assert trace_pb2.Span.FromString(kept).trace_id == span.trace_id
        how, body = wire.packed(None, kept)
        assert how == wire.PACKED_PROTOBUF
        assert _same(wire.unpacked(how, body), wire.span_json(trace_pb2.Span.FromString(kept)))
