"""Importing through the service: runs, messages and counts saved at once, or nothing."""

from __future__ import annotations

import io
import json

import pytest

from contextsim.counting.estimators import ESTIMATORS
from webapp.estimators.reads import request_rows
from webapp.ingest.uploads.services import run_import, store_upload
from webapp.models import ImportJob, Message, Run, Upload

NATIVE = {
    "contextsim": 1,
    "runs": [
        {
            "title": "main",
            "session_id": "s1",
            "messages": [
                {"role": "user", "content": "read the file"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_call", "id": "c1", "name": "read", "arguments": {}}],
                    "usage": {"input_tokens": 100, "cache_read": 20, "cache_write": 5},
                },
                {
                    "role": "tool",
                    "content": [{"type": "tool_result", "call_id": "c1", "text": "x" * 400}],
                },
                {"role": "assistant", "content": "done", "usage": {"input_tokens": 300}},
            ],
        },
        {
            "title": "helper",
            "session_id": "s2",
            "parent_session_id": "s1",
            "subagent": True,
            "messages": [{"role": "user", "content": "sub task"}],
        },
    ],
}


def import_bytes(owner, name: str, data: bytes, fmt: str = "") -> ImportJob:
    job = store_upload(owner, name, io.BytesIO(data), fmt)
    return run_import(job.pk)


@pytest.mark.django_db
def test_import_saves_runs_messages_counts_and_a_collection(alice):
    job = import_bytes(alice, "log.json", json.dumps(NATIVE).encode())
    assert job.status == "done" and job.format == "native"
    main, helper = Run.objects.order_by("id")
    assert (main.message_count, main.request_count, main.requests_with_usage) == (4, 2, 2)
    assert main.peak_measured_context == 300
    assert main.tool_call_count == 1
    assert helper.subagent and helper.collection == main.collection is not None
    message = Message.objects.get(run=main, index=2)
    assert message.kind == "tool_result"
    assert set(message.counts) == set(ESTIMATORS)
    assert message.counts["chars4"] == 100 + 4


@pytest.mark.django_db
def test_request_rows_sum_counts_of_each_history_and_show_measured(alice):
    import_bytes(alice, "log.json", json.dumps(NATIVE).encode())
    rows = request_rows(Run.objects.get(title="main"))
    counts = [
        m.counts["chars4"] for m in Message.objects.filter(run__title="main").order_by("index")
    ]
    assert [r.history for r in rows] == [1, 3]
    assert [r.estimates["chars4"] for r in rows] == [counts[0], sum(counts[:3])]
    assert [r.measured for r in rows] == [125, 300]
    assert rows[0].tools == "read"


@pytest.mark.django_db
def test_failed_import_saves_nothing_but_keeps_the_raw_upload(alice):
    bad = json.loads(json.dumps(NATIVE))
    bad["runs"][1]["messages"][0]["role"] = "robot"
    job = import_bytes(alice, "bad.json", json.dumps(bad).encode())
    assert job.status == "failed"
    assert "bad.json: $.runs[1].messages[0].role: expected one of" in job.error
    assert Run.objects.count() == 0 and Message.objects.count() == 0
    upload = Upload.objects.get()
    assert upload.file.read() == json.dumps(bad).encode()
    assert upload.sha256 and upload.size == len(json.dumps(bad).encode())


@pytest.mark.django_db
def test_unknown_format_lists_the_supported_formats(alice):
    job = import_bytes(alice, "notes.json", b'{"hello": "world"}')
    assert job.status == "failed"
    assert (
        "supported formats: native, claude-code, codex, gemini-cli, claude-trace, inspect-ai"
        in job.error
    )


@pytest.mark.django_db
def test_nul_characters_in_content_are_stored_on_every_database(alice):
    doc = json.loads(json.dumps(NATIVE))
    doc["runs"][0]["title"] = "nul\x00title"
    doc["runs"][0]["messages"][2]["content"][0]["text"] = "bin\x00ary"
    job = import_bytes(alice, "nul.json", json.dumps(doc).encode())
    assert job.status == "done", job.error
    stored = Message.objects.get(run__session_id="s1", index=2)
    assert stored.parts[0]["text"] == "bin\ufffdary"
    assert Run.objects.get(session_id="s1").title == "nul\ufffdtitle"


@pytest.mark.django_db
def test_nul_characters_in_tool_arguments_and_names_are_stored_on_every_database(alice):
    doc = json.loads(json.dumps(NATIVE))
    call = doc["runs"][0]["messages"][1]["content"][0]
    call["arguments"] = {"path": "a\x00b"}
    call["name"] = "re\x00ad"
    doc["runs"][0]["model"] = "mo\x00del"
    doc["runs"][0]["compactions"] = [{"before_message": 2, "trigger": "au\x00to"}]
    job = import_bytes(alice, "nul.json", json.dumps(doc).encode())
    assert job.status == "done", job.error
    stored = Message.objects.get(run__session_id="s1", index=1)
    part = stored.parts[0]
    assert part["name"] == "re\ufffdad" and stored.tool_names == "re\ufffdad"
    run = Run.objects.get(session_id="s1")
    assert run.model == "mo\ufffddel" and run.compactions[0]["trigger"] == "au\ufffdto"
    # The arguments are the JSON text sent, where a NUL is the escape \u0000: storable.
    assert json.loads(part["arguments"]) == {"path": "a\x00b"}


@pytest.mark.django_db
def test_a_file_forced_as_the_wrong_format_saves_nothing_and_says_why(alice, corpus):
    data = (corpus / "claude_code" / "ccviewer_5c0375b4.jsonl").read_bytes()
    job = import_bytes(alice, "session.jsonl", data, "codex")
    assert job.status == "failed"
    assert "reads as Claude Code session JSONL" in job.error
    assert not Run.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "data",
    [
        b'{"x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
        b'{"contextsim": 1, "runs": [{"messages": [{"role": "user", "content": "x", "n": '
        + b"9" * 5000
        + b"}]}]}",
        b'{"type":"user","uuid":["u"],"sessionId":"s","message":{"role":"user","content":"a"}}\n'
        b'{"type":"assistant","uuid":"a","sessionId":"s","message":{"id":"m","role":"assistant",'
        b'"content":[],"usage":{"input_tokens":100000000000000000000}}}\n',
    ],
)
def test_input_past_the_limits_fails_the_import_cleanly_upload_and_api(alice, data):
    from django.test import Client

    from webapp.access.services.tokens import create_token

    job = import_bytes(alice, "odd.json", data)
    assert job.status == "failed" and "internal error" not in job.error
    assert not Run.objects.exists()
    key = create_token(alice, "k")[1]
    api = Client(headers={"Authorization": f"Bearer {key}"})
    response = api.post("/api/runs/", data, content_type="application/json")
    assert response.status_code == 400 and "error" in response.json()
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_lone_surrogate_is_stored_replaced_with_a_warning(alice):
    message = '{"role": "user", "content": "a \\ud83d"}'
    data = '{"contextsim": 1, "runs": [{"title": "t", "messages": [' + message + "]}]}"
    job = import_bytes(alice, "half.json", data.encode())
    assert job.status == "done"
    assert any("lone surrogate" in w for w in job.warnings)
    assert Run.objects.get().messages.get().parts[0]["text"] == "a \ufffd"
