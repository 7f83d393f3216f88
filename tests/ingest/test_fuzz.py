"""Bad input never crashes: mutations of the real corpus logs (truncation, type flips,
deep nesting, huge numbers, lone surrogates, bad UTF-8) either parse and simulate or
raise a FormatError naming where; never another exception."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings

from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import simulate_run
from contextsim.ingest.base import FormatError
from contextsim.ingest.detect import parse_stream
from contextsim.registry import POLICIES
from tests.conftest import corpus_root
from tests.mutations import MUTATION, corpus_files, mutated


def _must_not_crash(name: str, data: bytes) -> None:
    try:
        parsed = parse_stream(name, io.BytesIO(data))
    except FormatError as exc:
        assert name in str(exc)
        return
    for run in parsed.runs:
        simulate_run(
            run, ESTIMATORS["chars4"], POLICIES["as_logged"], budget=10**6, hard_limit=10**6
        )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**MUTATION)
def test_mutated_corpus_logs_parse_or_say_where_they_are_wrong(choice, line, path, odd, cut, kind):
    files = corpus_files()
    if not files:
        pytest.skip(f"real-log corpus not found at {corpus_root()}")
    file = files[choice % len(files)]
    _must_not_crash(file.name, mutated(file, line, path, odd, cut, kind))


def test_a_lone_surrogate_is_replaced_and_said():
    data = '{"contextsim": 1, "runs": [{"messages": [{"role": "user", "content": "a \\ud83d b"}]}]}'
    parsed = parse_stream("half.json", io.BytesIO(data.encode()))
    assert parsed.runs[0].messages[0].text == "a \ufffd b"
    assert any("1 lone surrogate(s)" in w for w in parsed.warnings)
    pair = (
        '{"contextsim": 1, "runs": [{"messages": [{"role": "user", "content": "\\ud83d\\ude00"}]}]}'
    )
    whole = parse_stream("pair.json", io.BytesIO(pair.encode()))
    assert whole.runs[0].messages[0].text == "\U0001f600" and not whole.warnings


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "nested too deeply"),
        (b'{"contextsim": 1, "n": ' + b"9" * 5000 + b"}", "a number too long to read"),
        (b'{"type": {"a": 1}, "payload": {}}\n{"type": ["x"]}\n', "could not recognise"),
    ],
)
def test_input_past_the_limits_is_refused_with_the_reason(data, said):
    with pytest.raises(FormatError) as err:
        parse_stream("odd.json", io.BytesIO(data))
    assert said in str(err.value)
