"""Message times from the logs that have them: what each record's timestamp says, as
seconds since the epoch; a bad one in the native format named, elsewhere ignored."""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path

import pytest

from contextsim.ingest.base import FormatError, iso_time, parse_time
from contextsim.ingest.detect import parse_path, parse_stream
from contextsim.systems.native.format import run_to_dict


def _seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _first_stamps(path: Path, types: tuple[str, ...]) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        data = json.loads(line)
        if data.get("type") in types and "timestamp" in data:
            out.append(data["timestamp"])
    return out


def test_claude_code_messages_carry_their_records_times(corpus: Path):
    path = corpus / "claude_code" / "ccviewer_fe5e1c67.jsonl"
    stamps = _first_stamps(path, ("user", "assistant"))
    run = parse_path(path).runs[0]
    assert run.messages[0].time == pytest.approx(_seconds(stamps[0]), abs=1e-3)
    times = [m.time for m in run.messages]
    assert all(t is not None for t in times)
    assert min(times) >= _seconds(min(stamps)) and max(times) <= _seconds(max(stamps))


def test_codex_messages_carry_their_records_times(corpus: Path):
    (path,) = sorted((corpus / "codex").glob("localpush_redacted_rollout-*.jsonl"))
    stamps = _first_stamps(path, ("response_item",))
    run = parse_path(path).runs[0]
    timed = [m.time for m in run.messages if m.time is not None]
    assert len(timed) == len(run.messages) - 1  # all but the base instructions
    assert min(timed) == pytest.approx(_seconds(min(stamps)), abs=1e-3)


def test_openhands_events_times(corpus: Path):
    path = corpus / "openhands" / "basic.json"
    events = json.loads(path.read_text())
    run = parse_path(path).runs[0]
    stamps = {e["timestamp"] for e in events if "timestamp" in e}
    assert {m.time for m in run.messages} <= {_seconds(s) for s in stamps}


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("2025-09-03T00:52:31.217Z", 1756860751.217),
        ("2025-09-03T00:52:31", 1756860751.0),
        ("2025-09-03T02:52:31+02:00", 1756860751.0),
        (1756860751, 1756860751.0),
        (1756860751217, 1756860751.217),
        (1756860751217000000, 1756860751.217),
    ],
)
def test_a_timestamp_reads_as_seconds_whatever_its_unit(value, seconds):
    assert parse_time(value) == pytest.approx(seconds, abs=1e-3)


@pytest.mark.parametrize("value", ["yesterday", "", True, float("nan"), -5, [1]])
def test_what_is_not_a_time_is_none(value):
    assert parse_time(value) is None


def test_native_times_round_trip_and_a_bad_one_is_named():
    data = {
        "contextsim": 1,
        "runs": [{"messages": [{"role": "user", "content": "hi", "timestamp": 1756860751.5}]}],
    }
    (run,) = parse_stream("r.json", io.BytesIO(json.dumps(data).encode())).runs
    assert run.messages[0].time == 1756860751.5
    back = run_to_dict(run)["messages"][0]["timestamp"]
    assert back == iso_time(1756860751.5) == "2025-09-03T00:52:31.500Z"
    data["runs"][0]["messages"][0]["timestamp"] = "soon"
    with pytest.raises(FormatError) as err:
        parse_stream("r.json", io.BytesIO(json.dumps(data).encode()))
    assert "$.runs[0].messages[0].timestamp: expected an ISO 8601 time" in str(err.value)


def test_inspect_responses_carry_their_model_events_completion_times(corpus: Path):
    path = corpus / "openai_chat" / "inspect_2025-05-12T20-27-36-04-00_browser.json"
    sample = json.loads(path.read_text())["samples"][0]
    events = [e for e in sample["events"] if e.get("event") == "model"]
    run = parse_path(path).runs[0]
    answered = [m.time for m in run.messages if m.role == "assistant"]
    assert answered[0] == pytest.approx(_seconds(events[0]["completed"]), abs=1e-3)
    first_user = next(m for m in run.messages if m.role == "user")
    assert first_user.time == pytest.approx(_seconds(events[0]["timestamp"]), abs=1e-3)


def test_otel_calls_take_their_spans_start_and_end():
    span = {
        "traceId": "t1",
        "spanId": "s1",
        "startTimeUnixNano": "1756860751000000000",
        "endTimeUnixNano": "1756860753500000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {
                "key": "gen_ai.input.messages",
                "value": {
                    "stringValue": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
                    )
                },
            },
            {
                "key": "gen_ai.output.messages",
                "value": {
                    "stringValue": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": "yo"}]}]
                    )
                },
            },
        ],
    }
    data = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    (run,) = parse_stream("t.json", io.BytesIO(json.dumps(data).encode())).runs
    assert [m.time for m in run.messages] == [1756860751.0, 1756860753.5]
