"""A file handed over in pieces gives the runs parse_stream gives: a big native
document parsed as it is handed over (never whole), any other file parsed then cut."""

from __future__ import annotations

import json
from dataclasses import replace
from io import BytesIO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.ingest import base as formats_base
from contextsim.ingest.base import FileEnd, FormatError, Restart, RunPiece
from contextsim.ingest.detect import parse_stream, pieces_of
from contextsim.systems.claude_code import format as claude_code
from contextsim.systems.codex import format as codex
from contextsim.systems.native import format as native
from tests.conftest import corpus_files, corpus_root

CORPUS = corpus_root()


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


@pytest.mark.parametrize(
    "path", corpus_files("claude_code", "*.jsonl"), ids=lambda p: p.name if p else "absent"
)
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


@pytest.mark.parametrize(
    "path", corpus_files("codex", "*.jsonl"), ids=lambda p: p.name if p else "absent"
)
def test_a_codex_rollout_in_pieces_gives_the_run_parse_stream_gives(path, monkeypatch):
    monkeypatch.setattr(codex, "FLUSH_LINES", 7)
    monkeypatch.setattr(codex, "KEEP", 12)
    raw = path.read_bytes()
    whole = parse_stream(path.name, BytesIO(raw))
    assert _joined(path.name, raw) == (whole.format, whole.runs, whole.warnings)
    seen = list(pieces_of(path.name, BytesIO(raw)))
    assert not any(isinstance(p, Restart) for p in seen)  # handed over as it was read
    assert sum(isinstance(p, RunPiece) for p in seen) > 10


def _rollout_lines(draw) -> list[dict]:
    """A random Codex rollout: instructions or not, typed and injected user messages
    with or without user_message events, model calls with parallel tool outputs,
    usage events (some repeated, some late), compactions."""
    from tests.systems.codex import test_format as c

    meta = {"id": "s", "timestamp": "2026-01-01T00:00:00Z"}
    if draw(st.booleans()):
        meta["base_instructions"] = {"text": "be brief"}
    lines = [c.record("session_meta", meta), c.CONTEXT]
    events = draw(st.booleans())
    calls = 0
    for _ in range(draw(st.integers(0, 30))):
        kinds = ["typed", "injected", "call", "answer", "compact", "usage", "meta"]
        kind = draw(st.sampled_from(kinds))
        if kind == "typed":  # what the person typed may look like markup
            opening = draw(st.sampled_from(["please do ", "<b>fix</b> "]))
            lines.append(c.message("user", opening + draw(st.text("ab ", max_size=8))))
            if events:
                lines.append(c.event(type="user_message", message="x"))
        elif kind == "injected":  # and what Codex injects may not
            text = draw(st.sampled_from(["<environment_context>x</environment_context>", "Note"]))
            lines.append(c.message("user", text))
        elif kind == "meta":  # a session line late in the file, instructions and all
            later = {**meta, "base_instructions": {"text": "later"}}
            lines.append(c.record("session_meta", later))
        elif kind == "call":
            ids = [f"c{calls + j}" for j in range(draw(st.integers(1, 4)))]
            calls += len(ids)
            lines += [c.call(i) for i in ids]
            late = draw(st.booleans())
            usage = c.tokens(draw(st.integers(1, 9_000)))
            lines += [] if late else [usage]
            lines += [c.output(i, "r" * draw(st.integers(0, 30))) for i in ids]
            lines += [usage] if late else []
        elif kind == "answer":
            lines += [c.message("assistant", "done"), c.tokens(draw(st.integers(1, 9_000)))]
        elif kind == "compact":
            lines.append(c.record("compacted", {"message": "summary"}))
        else:
            lines.append(c.tokens(draw(st.integers(1, 9_000))))
    return lines


@settings(max_examples=120, deadline=None)
@given(st.data(), st.integers(1, 6), st.integers(1, 5))
def test_a_random_rollout_in_pieces_gives_the_run_parse_stream_gives(data, flush, keep):
    from tests.systems.codex import test_format as c

    raw = c.raw(_rollout_lines(data.draw))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codex, "FLUSH_LINES", flush)
        patch.setattr(codex, "KEEP", keep)
        whole = parse_stream("r.jsonl", BytesIO(raw))
        assert _joined("r.jsonl", raw) == (whole.format, whole.runs, whole.warnings)
