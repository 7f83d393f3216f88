"""A JSON document read from a stream a window at a time gives json.loads' value, and
json.loads' errors placed at the same line and column, whatever the window size."""

from __future__ import annotations

import json
from io import BytesIO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.ingest import json_stream
from contextsim.ingest.base import FormatError, read_source

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=40,
)


def _load(text: str, chunk: int, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(json_stream, "CHUNK", chunk)
    return json_stream.load(BytesIO(text.encode("utf-8", "surrogatepass")))[0]


@settings(max_examples=300, deadline=None)
@given(documents, st.sampled_from([1, 2, 3, 7, 64, 1 << 20]), st.booleans(), st.booleans())
def test_a_streamed_document_equals_json_loads(value, chunk, indent, ascii_only):
    text = json.dumps(value, indent=2 if indent else None, ensure_ascii=ascii_only)
    with pytest.MonkeyPatch.context() as patch:
        assert _load(text, chunk, patch) == json.loads(text)


@settings(max_examples=300, deadline=None)
@given(documents, st.integers(min_value=0), st.sampled_from([1, 3, 16, 1 << 20]))
def test_a_broken_document_fails_where_json_loads_does(value, cut, chunk):
    text = json.dumps(value, indent=1, ensure_ascii=False)
    broken = text[: cut % (len(text) + 1)] + "]}x"[cut % 3]
    try:
        expected = json.loads(broken)
    except json.JSONDecodeError as exc:
        with (
            pytest.MonkeyPatch.context() as patch,
            pytest.raises(json_stream.JSONStreamError) as got,
        ):
            _load(broken, chunk, patch)
        # The same place; the message may name the first thing that went wrong in
        # another words (a member read alone fails where the whole text failed).
        assert (got.value.line, got.value.column) == (exc.lineno, exc.colno)
    else:
        with pytest.MonkeyPatch.context() as patch:
            assert _load(broken, chunk, patch) == expected


def test_bad_utf8_is_placed_by_line_and_byte_column(monkeypatch):
    monkeypatch.setattr(json_stream, "CHUNK", 4)
    body = b'{"a": [\n  "ok",\n  "b\xffd"\n]}'
    with pytest.raises(json_stream.NotUTF8) as got:
        json_stream.load(BytesIO(body))
    assert (got.value.line, got.value.column, got.value.byte) == (3, 5, 0xFF)


def test_a_one_line_document_longer_than_the_first_line_read_is_a_document(monkeypatch):
    monkeypatch.setattr("contextsim.ingest.base.FIRST_LINE", 16)
    messages = [{"role": "user", "content": "Привет " * 50}] * 20
    body = json.dumps({"contextsim": 1, "runs": [{"messages": messages}]}, ensure_ascii=False)
    source = read_source("one.json", BytesIO(body.encode()))
    assert source.data == json.loads(body)  # type: ignore[union-attr]


def test_deep_nesting_and_huge_numbers_are_errors_not_crashes():
    for body, said in (
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"n": ' + b"9" * 5_000 + b"}", "a number too long to read"),
    ):
        with pytest.raises(FormatError) as got:
            read_source("bad.json", BytesIO(body))
        assert said in str(got.value)


def test_lone_surrogates_cut_between_two_windows_are_found_and_replaced(monkeypatch):
    monkeypatch.setattr(json_stream, "CHUNK", 3)
    source = read_source("s.json", BytesIO(b'{"text": "emoji cut \\ud83d here"}'))
    assert source.data == {"text": "emoji cut \ufffd here"}  # type: ignore[union-attr]
    assert "1 lone surrogate" in source.warnings[0]  # type: ignore[union-attr]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(documents, max_size=5), max_size=4),
    st.sampled_from([1, 5, 64, 1 << 20]),
    st.booleans(),
)
def test_elements_hand_over_each_split_array_element_in_order_and_leave_it_empty(
    groups, chunk, indent
):
    doc = {"v": 1, "runs": [{"title": f"r{i}", "messages": g} for i, g in enumerate(groups)]}
    text = json.dumps(doc, indent=2 if indent else None, ensure_ascii=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_stream, "CHUNK", chunk)
        reader = json_stream.Elements(BytesIO(text.encode()), b"", ("runs", "*", "messages"))
        handed = list(reader)
    assert handed == [
        (("runs", r, "messages", i), m) for r, g in enumerate(groups) for i, m in enumerate(g)
    ]
    emptied = {**doc, "runs": [{**run, "messages": []} for run in doc["runs"]]}
    assert reader.document == emptied


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 5])
def test_numbers_and_literals_cut_at_the_window_end_are_read_whole(chunk, monkeypatch):
    text = '[1.5, 2, -3e+2, 1.0E-5, 12345678901234567890, true, false, null, {"a": 0.25}]'
    assert _load(text, chunk, monkeypatch) == json.loads(text)


def test_a_big_document_with_a_byte_order_mark_is_read(monkeypatch):
    monkeypatch.setattr("contextsim.ingest.base.LAZY_BYTES", 0)
    body = b"\xef\xbb\xbf" + json.dumps({"contextsim": 1, "runs": []}).encode()
    assert read_source("bom.json", BytesIO(body)).data == {"contextsim": 1, "runs": []}  # type: ignore[union-attr]


def test_a_jsonl_file_with_a_second_line_longer_than_the_first_line_read_is_jsonl(monkeypatch):
    monkeypatch.setattr("contextsim.ingest.base.FIRST_LINE", 16)
    lines = [{"type": "a"}, {"type": "b", "text": "x" * 200}, {"type": "c"}]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    source = read_source("long.jsonl", BytesIO(body))
    assert [r.data for r in source] == lines  # type: ignore[union-attr]


def test_a_file_cut_inside_a_character_at_a_read_boundary_is_said_not_utf8(monkeypatch):
    monkeypatch.setattr(json_stream, "CHUNK", 8)
    body = b'["x",\n"' + b"a" * 6 + b"\xe2"
    with pytest.raises(json_stream.NotUTF8) as got:
        json_stream.load(BytesIO(body))
    assert got.value.byte == 0xE2 and got.value.line == 2


def test_a_malformed_value_is_refused_without_reading_the_rest_of_the_file(monkeypatch):
    monkeypatch.setattr(json_stream, "CHUNK", 64)
    reads = []

    class Counting(BytesIO):
        def read(self, size=-1):
            got = super().read(size)
            reads.append(len(got))
            return got

    body = b'[1, tru, "' + b"x" * 100_000 + b'"]'
    with pytest.raises(json_stream.JSONStreamError):
        json_stream.load(Counting(body))
    assert sum(reads) < 10_000


def test_a_key_repeated_on_the_way_to_a_split_array_is_refused_and_others_kept_last():
    # json.loads keeps a repeated key's last value; elements of the first value handed
    # over could not be taken back, so that one is refused, and any other kept last.
    raw = b'{"a": {"s": [1, 2], "s": [3]}}'
    with pytest.raises(json_stream.JSONStreamError, match="the key 's' is repeated"):
        list(json_stream.Elements(BytesIO(raw), b"", ("a", "s")))
    reader = json_stream.Elements(BytesIO(b'{"a": {"s": [1], "t": 1, "t": 2}}'), b"", ("a", "s"))
    assert list(reader) == [(("a", "s", 0), 1)]
    assert reader.document == {"a": {"s": [], "t": 2}}
