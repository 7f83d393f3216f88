"""A file handed over in pieces gives the runs parse_stream gives: a big native
document parsed as it is handed over (never whole), any other file parsed then cut."""

from __future__ import annotations

import json
from dataclasses import replace
from io import BytesIO
from pathlib import Path

import pytest

from contextsim.formats import (
    FileEnd,
    FormatError,
    Restart,
    RunPiece,
    claude_code,
    native,
    parse_stream,
    pieces_of,
)
from contextsim.formats import base as formats_base

CORPUS = Path(__file__).resolve().parents[3] / ".." / "shared" / "corpus"


def _joined(name: str, raw: bytes, format: str | None = None):
    messages: dict[int, list] = {}
    end = None
    for piece in pieces_of(name, BytesIO(raw), format):
        assert end is None, "nothing after the end"
        if isinstance(piece, Restart):
            messages.clear()
        elif isinstance(piece, RunPiece):
            messages.setdefault(piece.run, []).extend(piece.messages)
        else:
            end = piece
    assert isinstance(end, FileEnd)
    runs = tuple(replace(run, messages=tuple(messages.get(r, ()))) for r, run in end.runs)
    return end.format, runs, end.warnings


def _native_doc(runs: int, messages: int) -> bytes:
    out = []
    for r in range(runs):
        items = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"Сообщение {r}.{i} 内容"}
            for i in range(messages)
        ]
        out.append(
            {
                "title": f"run {r}",
                "messages": items,
                "compactions": [{"before_message": 2, "pre_tokens": 10}],
                "elisions": [
                    {"message": 1, "from_step": 1, "text": "short"},
                    {"message": messages + 5, "from_step": 1, "text": "past the end"},
                ],
            }
        )
    return json.dumps({"contextsim": 1, "runs": out}, ensure_ascii=False).encode()


@pytest.mark.parametrize("lazy_over", [0, 1 << 40])
def test_a_native_document_in_pieces_gives_the_runs_parse_stream_gives(monkeypatch, lazy_over):
    monkeypatch.setattr(formats_base, "LAZY_BYTES", lazy_over)
    monkeypatch.setattr(native, "PIECE", 7)
    raw = _native_doc(3, 40)
    whole = parse_stream("big.json", BytesIO(raw))
    fmt, runs, warnings = _joined("big.json", raw)
    assert (fmt, runs, warnings) == (whole.format, whole.runs, whole.warnings)
    assert [len(r.elisions) for r in runs] == [1, 1, 1]


def test_a_streamed_native_document_with_a_bad_message_fails_naming_it(monkeypatch):
    monkeypatch.setattr(formats_base, "LAZY_BYTES", 0)
    doc = json.loads(_native_doc(1, 30))
    doc["runs"][0]["messages"][17]["role"] = "robot"
    with pytest.raises(FormatError) as got:
        _joined("bad.json", json.dumps(doc).encode())
    assert "$.runs[0].messages[17]" in str(got.value)


def test_a_streamed_document_that_is_not_native_is_parsed_whole(monkeypatch):
    monkeypatch.setattr(formats_base, "LAZY_BYTES", 0)
    path = CORPUS / "openhands" / "basic.json"
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared corpus is not here)")
    raw = path.read_bytes()
    whole = parse_stream(path.name, BytesIO(raw))
    assert _joined(path.name, raw) == (whole.format, whole.runs, whole.warnings)


def test_lone_surrogates_in_streamed_messages_are_replaced_and_said(monkeypatch):
    monkeypatch.setattr(formats_base, "LAZY_BYTES", 0)
    raw = b'{"contextsim": 1, "runs": [{"messages": [{"role": "user", "content": "cut \\ud83d"}]}]}'
    _, (run,), warnings = _joined("s.json", raw)
    assert run.messages[0].text == "cut \ufffd"
    assert any("1 lone surrogate" in w for w in warnings)


def _claude_files():
    folder = CORPUS / "claude_code"
    return sorted(folder.glob("*.jsonl")) if folder.exists() else []


@pytest.mark.parametrize("path", _claude_files(), ids=lambda p: p.name)
def test_a_claude_code_session_in_pieces_gives_the_runs_parse_stream_gives(path, monkeypatch):
    monkeypatch.setattr(claude_code, "FLUSH_LINES", 3)
    monkeypatch.setattr(claude_code, "KEEP", 1)
    raw = path.read_bytes()
    whole = parse_stream(path.name, BytesIO(raw))
    assert _joined(path.name, raw) == (whole.format, whole.runs, whole.warnings)


def _late_line_session() -> bytes:
    """A Claude Code session whose first response goes on after two user lines: read
    a line at a time, keeping one message, its last line joins a message handed over."""
    head = {"sessionId": "s", "isSidechain": False, "timestamp": "2026-01-01T00:00:00Z"}

    def line(kind, uid, message):
        return json.dumps({**head, "type": kind, "uuid": uid, "message": message})

    answer = {"role": "assistant", "id": "msg-1", "model": "claude-x"}
    lines = [
        line("user", "u1", {"role": "user", "content": "hello"}),
        line("assistant", "a1", {**answer, "content": [{"type": "text", "text": "one"}]}),
        line("user", "u2", {"role": "user", "content": "more"}),
        line("user", "u3", {"role": "user", "content": "and more"}),
        line("assistant", "a2", {**answer, "content": [{"type": "text", "text": "two"}]}),
    ]
    return ("\n".join(lines) + "\n").encode()


LATE_LINE_SESSION = _late_line_session()


def test_a_line_joining_a_message_handed_over_restarts_with_the_whole_file(monkeypatch):
    monkeypatch.setattr(claude_code, "FLUSH_LINES", 1)
    monkeypatch.setattr(claude_code, "KEEP", 1)
    raw = LATE_LINE_SESSION
    seen = list(pieces_of("s.jsonl", BytesIO(raw)))
    restarts = [i for i, p in enumerate(seen) if isinstance(p, Restart)]
    assert len(restarts) == 1
    whole = parse_stream("s.jsonl", BytesIO(raw))
    after = seen[restarts[0] + 1 :]
    runs = {}
    for piece in after[:-1]:
        runs.setdefault(piece.run, []).extend(piece.messages)
    assert tuple(replace(r, messages=tuple(runs[n])) for n, r in after[-1].runs) == whole.runs
    assert [p.text for p in whole.runs[0].messages[1].parts] == ["one", "two"]


@pytest.mark.parametrize(
    "doc, said",
    [
        ({"contextsim": 1, "runs": [{"title": "empty", "messages": []}]}, "no messages were found"),
        ({"contextsim": 1, "runs": {"x": {"messages": []}}}, "a list of runs"),
    ],
)
def test_a_streamed_native_document_is_refused_as_parse_stream_refuses_it(doc, said, monkeypatch):
    monkeypatch.setattr(formats_base, "LAZY_BYTES", 0)
    raw = json.dumps(doc).encode()
    with pytest.raises(FormatError) as whole:
        parse_stream("d.json", BytesIO(raw), "native")
    with pytest.raises(FormatError) as pieces:
        _joined("d.json", raw, "native")
    assert said in str(whole.value) and str(pieces.value) == str(whole.value)
