"""A compaction request's measured size is one more point of its session's fit."""

from __future__ import annotations

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import reconciliation
from contextsim.model import Compaction, Message, Run, TextPart, Usage
from contextsim.truth.compaction_points import compaction_points, requests_of

EST = ESTIMATORS["chars4"]
SESSION = "s-1"


def _turns(n: int, first_input: int, words: int) -> list[Message]:
    """n user/assistant pairs; request i is measured at first_input + 1000 i tokens."""
    out: list[Message] = []
    for i in range(n):
        out.append(Message("user", (TextPart("word " * words),)))
        used = Usage(first_input + 1000 * i, output_tokens=10)
        out.append(Message("assistant", (TextPart("ok"),), usage=used))
    return out


def _session() -> Run:
    before = _turns(4, 20_000, 800)
    summary = Message("user", (TextPart("Summary: all of it"),), compact_summary=True)
    after = _turns(4, 12_000, 800)
    messages = (*before, summary, *after)
    return Run(
        "session",
        messages,
        "claude-code",
        session_id=SESSION,
        compactions=(Compaction(len(before), 30_000, "auto"),),
    )


def _request(measured: int, session: str = SESSION) -> Run:
    prompt = Message("user", (TextPart("Summarize this conversation " * 50),))
    reply = Message("assistant", (TextPart("Summary"),), usage=Usage(measured, output_tokens=900))
    return Run(
        "compaction request",
        (prompt, reply),
        "claude-code",
        session_id="agent-acompact-1",
        parent_session_id=session,
        subagent=True,
        compaction_request=True,
    )


def test_the_compaction_request_adds_the_compacted_history_and_its_prompt_as_a_point():
    session, request = _session(), _request(31_000)
    sk = build(session, EST)
    (point,) = compaction_points(sk, [build(request, EST)])
    assert point.boundary == 8
    assert point.measured == 31_000
    assert point.prompt == sum(build(request, EST).tokens[:1])
    plain = reconciliation(sk)
    with_point = reconciliation(sk, points=(point,))
    assert plain is not None and with_point is not None
    assert with_point.fitted_on == plain.fitted_on + 1


def test_an_outlying_compaction_request_shows_in_the_worst_error_not_in_the_fit():
    sk = build(_session(), EST)
    (point,) = compaction_points(sk, [build(_request(300_000), EST)])
    plain = reconciliation(sk)
    odd = reconciliation(sk, points=(point,))
    assert plain is not None and odd is not None
    assert abs(odd.overhead - plain.overhead) <= 0.02 * 20_000
    assert odd.worst_error is not None and odd.worst_error > 0.5


def test_only_the_sessions_own_measured_compaction_requests_are_paired_in_order():
    session = _session()
    theirs, unmeasured, ours = _request(1, "other"), _request(0), _request(31_000)
    found = requests_of(session, [session, theirs, unmeasured, ours])
    assert found == [unmeasured, ours]
    points = compaction_points(build(session, EST), [build(r, EST) for r in found])
    assert [p.measured for p in points] == [31_000]
    assert requests_of(ours, [session, ours]) == []
