"""Queued imports, the import_run command, corpus files end to end, and `serve`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from contextsim.cli.main import run_summary
from contextsim.ingest.detect import parse_path
from tests.conftest import ROOT
from tests.web.test_import_service import NATIVE, import_bytes
from tests.web.test_pages import upload
from webapp import tasks
from webapp.ingest.uploads import views as run_views
from webapp.ingest.uploads.services import run_import
from webapp.models import ImportJob, Run, Upload

pytestmark = pytest.mark.django_db


def test_large_upload_is_queued_for_a_worker_and_its_status_polls(alice_client, monkeypatch):
    queued: list[int] = []
    monkeypatch.setattr(run_views, "SYNC_IMPORT_BYTES", 10)
    monkeypatch.setattr(tasks.import_upload, "delay", queued.append)
    page = upload(alice_client, ("big.json", json.dumps(NATIVE).encode())).content.decode()
    job = ImportJob.objects.get()
    assert queued == [job.pk] and job.status == "queued"
    status_url = reverse("import-status", args=[job.public_id])
    assert f'hx-get="{status_url}"' in page and 'hx-trigger="every 1s"' in page
    run_import(job.pk)
    done = alice_client.get(status_url).content.decode()
    assert "hx-trigger" not in done
    assert all(f"/runs/{r.public_id}/" in done for r in Run.objects.all())


def test_import_status_of_someone_elses_job_is_404(alice, bob):
    job = import_bytes(alice, "a.json", json.dumps(NATIVE).encode())
    client = Client()
    client.force_login(bob)
    assert client.get(reverse("import-status", args=[job.public_id])).status_code == 404


def test_import_run_command_imports_files_and_reports_runs(tmp_path: Path, capsys):
    path = tmp_path / "log.json"
    path.write_text(json.dumps(NATIVE))
    call_command("import_run", str(path), "--owner", "carol")
    out = capsys.readouterr().out
    run = Run.objects.get(session_id="s1")
    assert f"native: main (2 requests) /runs/{run.public_id}/" in out
    assert run.owner is not None and run.owner.username == "carol"
    # The same file again links to what it gave; --again imports it anyway.
    call_command("import_run", str(path), "--owner", "carol")
    captured = capsys.readouterr()
    assert "already imported (the same bytes)" in captured.err
    assert f"/runs/{run.public_id}/" in captured.out and Run.objects.count() == 2
    call_command("import_run", str(path), "--owner", "carol", "--again")
    assert Run.objects.count() == 4


def test_import_run_command_fails_clearly_and_saves_nothing(tmp_path: Path, capsys):
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b'{"contextsim": 1, "type": "run"}\n{"type": "message", "role": "user"\n')
    missing = tmp_path / "missing.json"
    with pytest.raises(CommandError, match="2 of 2 file"):
        call_command("import_run", str(path), str(missing))
    err = capsys.readouterr().err
    assert "broken.jsonl: line 2: invalid JSON" in err
    assert "missing.json: no such file" in err
    assert Run.objects.count() == 0 and Upload.objects.count() == 1


@pytest.mark.parametrize(
    "name",
    [
        "claude_code/codemie_session-196820da.jsonl",
        "claude_code/ccviewer_fe5e1c67.jsonl",
        "codex/localpush_redacted_rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
        "openai_chat/inspect_2025-05-12T20-27-36-04-00_browser.json",
        "swe_agent/gpt4_pydicom__pydicom-1458.traj",
        "swe_agent/gpt4_6e44b9__sweagenttestrepo-1c2844.traj",
        "openhands/basic.json",
    ],
)
def test_corpus_files_import_with_the_same_figures_as_the_cli(corpus: Path, alice, name: str):
    data = (corpus / name).read_bytes()
    job = import_bytes(alice, Path(name).name, data)
    assert job.status == "done", job.error
    expected = [run_summary(r) for r in parse_path(corpus / name).runs]
    stored = [
        {
            "title": r.title,
            "model": r.model,
            "messages": r.message_count,
            "requests": r.request_count,
            "requests_with_usage": r.requests_with_usage,
            "max_measured_context": r.peak_measured_context,
            "compactions": len(r.compactions),
            "tool_calls": r.tool_call_count,
            "subagent": r.subagent,
        }
        for r in Run.objects.order_by("id")
    ]
    assert stored == expected


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _running(group: int) -> list[str]:
    """The processes of a process group that still run (a killed one that its new
    parent has not reaped yet is not running)."""
    found = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(group)], capture_output=True)
    rows = [line.split() for line in found.stdout.decode().splitlines()]
    return [pid for pid, state in rows if not state.startswith("Z")]


@pytest.mark.django_db(transaction=True)
def test_serve_migrates_starts_a_worker_and_serves_the_dashboard(tmp_path: Path):
    port = free_port()
    env = {**os.environ, "CONTEXTSIM_DATA_DIR": str(tmp_path), "DATABASE_URL": ""}
    env.pop("DATABASE_URL")
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), "--no-demo"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        page = ""
        for _ in range(120):
            try:
                page = (
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read().decode()
                )
                break
            except OSError:
                time.sleep(0.5)
        assert "No runs yet." in page
        css = urllib.request.urlopen(f"http://127.0.0.1:{port}/static/css/app.css").read()
        assert b"--accent" in css
        main = ["pgrep", "-f", "celery -A webapp worker", "-P", str(server.pid)]
        found = subprocess.run(main, capture_output=True, text=True).stdout.split()
        assert found, "serve started no Celery worker"
        # A worker that dies (killed for its memory, say) is started again.
        first = int(found[0])
        os.kill(first, 9)
        again = ""
        for _ in range(60):
            found = subprocess.run(main, capture_output=True, text=True).stdout.split()
            again = " ".join(p for p in found if int(p) != first)
            if again:
                break
            time.sleep(0.5)
        assert again, "serve did not start its worker again"
        # Stopped with SIGTERM (as `kill` or a service manager does), idle, serve stops
        # within 2 s, its worker (a process group of its own: pool and beat) with it.
        worker = int(again.split()[0])
        time.sleep(2)  # settled: idle
        asked = time.monotonic()
        server.terminate()
        server.wait(timeout=30)
        assert time.monotonic() - asked < 2
        assert _running(worker) == [], "the worker outlived serve"
    finally:
        if server.poll() is None:
            os.killpg(server.pid, 15)
            server.wait(timeout=30)
        subprocess.run(["pkill", "-g", str(server.pid)], check=False)
    assert (tmp_path / "contextsim.sqlite3").exists()


def test_an_import_status_link_opens_a_whole_page_and_htmx_gets_the_partial(alice):
    job = import_bytes(alice, "a.json", json.dumps(NATIVE).encode())
    client = Client()
    client.force_login(alice)
    url = reverse("import-status", args=[job.public_id])
    page = client.get(url).content.decode()
    assert "<html" in page and f'id="job-{job.public_id}"' in page and "<form" in page
    partial = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and partial.lstrip().startswith('<div class="job job-done"')


@pytest.mark.parametrize(
    "name",
    [
        "codex/zoqore_rollout-2025-12-09T18-16-09-019b0566-9af8-7861-b806-46997f51323a.jsonl",
        "gemini_cli/vct_session-8a20078e.json",
        "claude_code/tpuinf_19a2e244.jsonl",
        "raw_api/hanq_redacted_log-2026-06-16-03-13-52.jsonl",
    ],
)
def test_a_stored_run_replays_and_fits_as_the_file_does(corpus: Path, alice, name: str):
    # What the importers keep (reasoning sizes, turn-only thinking, usage tiers and
    # models, windows and their sources) survives the store: one truth, CLI and web.
    from contextsim.counting.builder import build
    from contextsim.counting.estimators import ESTIMATORS
    from contextsim.engine.simulate import reconcile_skeleton
    from webapp.store.reads import stored_run

    job = import_bytes(alice, Path(name).name, (corpus / name).read_bytes())
    assert job.status == "done", job.error
    parsed = parse_path(corpus / name).runs
    stored = [stored_run(r) for r in Run.objects.order_by("id")]
    assert len(stored) == len(parsed)
    for mine, theirs in zip(stored, parsed, strict=True):
        assert (mine.context_window, mine.window_source) == (
            theirs.context_window,
            theirs.window_source,
        )
        a, b = build(mine, ESTIMATORS["o200k"]), build(theirs, ESTIMATORS["o200k"])
        assert a.tokens == b.tokens and a.usage == b.usage
        assert reconcile_skeleton(a) == reconcile_skeleton(b)
