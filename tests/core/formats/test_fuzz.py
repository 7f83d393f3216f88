"""Bad input never crashes: mutations of the real corpus logs (truncation, type flips,
deep nesting, huge numbers, lone surrogates, bad UTF-8) either parse and simulate or
raise a FormatError naming where; never another exception."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextsim.estimators import ESTIMATORS
from contextsim.formats import FormatError, parse_stream
from contextsim.simulate import simulate_run
from tests.conftest import corpus_root

ODD_VALUES = st.sampled_from(
    [None, -1, 2**70, 1.5e308, True, "", "\ud800", {"type": 5}, [[[]]], {"a": [1]}, "x" * 300]
)


def _corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".jsonl", ".json", ".traj"))


def _mutate(value, path: list, odd):
    """`value` with the element at `path` (indexes into lists and dicts) replaced."""
    if not path:
        return odd
    if isinstance(value, dict) and value:
        keys = list(value)
        key = keys[path[0] % len(keys)]
        return {**value, key: _mutate(value[key], path[1:], odd)}
    if isinstance(value, list) and value:
        i = path[0] % len(value)
        return [*value[:i], _mutate(value[i], path[1:], odd), *value[i + 1 :]]
    return odd


def _must_not_crash(name: str, data: bytes) -> None:
    try:
        parsed = parse_stream(name, io.BytesIO(data))
    except FormatError as exc:
        assert name in str(exc)
        return
    for run in parsed.runs:
        simulate_run(run, ESTIMATORS["chars4"], "as_logged", budget=10**6, hard_limit=10**6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    choice=st.integers(0, 10**6),
    line=st.integers(0, 10**6),
    path=st.lists(st.integers(0, 50), max_size=6),
    odd=ODD_VALUES,
    cut=st.integers(0, 10**6),
    kind=st.sampled_from(["mutate", "truncate", "deep", "bigint", "bad utf-8"]),
)
def test_mutated_corpus_logs_parse_or_say_where_they_are_wrong(choice, line, path, odd, cut, kind):
    root = corpus_root()
    files = _corpus_files(root) if root.is_dir() else []
    if not files:
        pytest.skip(f"real-log corpus not found at {root}")
    file = files[choice % len(files)]
    raw = file.read_bytes()
    lines = raw.splitlines() if file.suffix == ".jsonl" else [raw]
    i = line % len(lines)
    target = lines[i]
    if kind == "mutate":
        target = json.dumps(_mutate(json.loads(target), path, odd)).encode()
    elif kind == "truncate":
        target = target[: cut % max(len(target), 1)]
    elif kind == "deep":
        target = b'{"type": "user", "message": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    elif kind == "bigint":
        target = target.replace(b"1", b"9" * 5000, 1)
    else:
        target = (
            target[: cut % max(len(target), 1)] + b"\xff\xfe" + target[cut % max(len(target), 1) :]
        )
    lines[i] = target
    _must_not_crash(file.name, b"\n".join(lines))


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
