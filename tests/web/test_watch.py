"""Watching the agents' folders: a home laid out as Claude Code, Codex and Gemini CLI lay
theirs out (real logs from the corpus, copied into a temporary home at test time), read
once, never twice across restarts, followed as a file grows, a bad file named and
skipped, subagents in their session's collection, every run with its project."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from contextsim.ingest.agent_folders import folders_to_watch
from contextsim.ingest.detect import parse_path
from tests.conftest import corpus_root
from webapp.ingest.watch.services import do_watch_pass
from webapp.models import Run, WatchedFile

pytestmark = pytest.mark.django_db

SOURCES = {
    "claude": ("claude_code", "pai_b7a09704.jsonl"),
    "agent": ("claude_code", "pai_b7a09704_agent-a0f3b42.jsonl"),
    "codex": ("codex", "zoqore_rollout-2025-12-09T18-1*.jsonl"),
    "gemini": ("gemini_cli", "vct_session-8a20078e.json"),
}


def _source(key: str) -> Path:
    folder, pattern = SOURCES[key]
    found = sorted((corpus_root() / folder).glob(pattern))
    if not found:
        pytest.skip(f"{pattern} is not in {corpus_root() / folder} (the shared corpus)")
    return found[0]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with each agent's folder, as the agents lay them out."""
    projects = tmp_path / ".claude" / "projects" / "-Users-neilhart"
    (projects / "b7a09704" / "subagents").mkdir(parents=True)
    shutil.copy(_source("claude"), projects / "b7a09704.jsonl")
    shutil.copy(_source("agent"), projects / "b7a09704" / "subagents" / "agent-a0f3b42.jsonl")
    day = tmp_path / ".codex" / "sessions" / "2025" / "12" / "09"
    day.mkdir(parents=True)
    shutil.copy(_source("codex"), day / "rollout-2025-12-09T18-1.jsonl")
    chats = tmp_path / ".gemini" / "tmp" / "ab14fe397f91" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(_source("gemini"), chats / "session-8a20078e.json")
    (chats / "session-broken.json").write_text('{"sessionId": "x", "messages": [')
    return tmp_path


def _expected(home: Path) -> int:
    return sum(
        len(parse_path(str(p)).runs) for p in home.rglob("*.json*") if "broken" not in p.name
    )


def test_every_session_is_read_once_with_its_project_and_its_agents(home, alice):
    folders = folders_to_watch([], home=home, env={})
    assert {f.agent for f in folders} == {"claude-code", "codex", "gemini-cli"}
    done = do_watch_pass(alice, folders, {})
    assert done.files == 5 and done.read == 5
    assert [p.name for p, _ in done.errors] == ["session-broken.json"]
    assert Run.objects.filter(owner=alice).count() == _expected(home)
    formats = set(Run.objects.values_list("format", flat=True))
    assert formats == {"claude-code", "codex", "gemini-cli"}
    assert all(r.project for r in Run.objects.all())
    # The subagent's file is in its session's collection.
    agent = Run.objects.get(subagent=True, format="claude-code")
    assert agent.collection_id is not None
    assert Run.objects.filter(collection=agent.collection, subagent=False).exists()
    broken = WatchedFile.objects.get(path__endswith="session-broken.json")
    assert broken.error and broken.runs == 0
    # Restarted: nothing unchanged is read again, nothing is stored twice.
    again = do_watch_pass(alice, folders, {})
    assert again.read == 0 and again.unchanged == 5
    assert Run.objects.count() == _expected(home)


def test_a_file_that_grows_is_followed(home, alice):
    log = next((home / ".codex").rglob("rollout-*.jsonl"))
    whole = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(whole[: len(whole) // 2]))
    folders = folders_to_watch([str(home / ".codex")], home=home, env={})
    known: dict[str, Run] = {}
    do_watch_pass(alice, folders, known)
    (run,) = Run.objects.filter(format="codex")
    before = run.message_count
    log.write_bytes(b"".join(whole))  # the agent wrote the rest
    grown = do_watch_pass(alice, folders, known)
    run.refresh_from_db()
    assert grown.read == 1 and run.message_count > before
    assert Run.objects.filter(format="codex").count() == 1
    (full,) = parse_path(str(log)).runs
    assert run.message_count == len(full.messages)


def test_a_history_is_shown_first_and_counted_by_the_tokenizers_later(home, alice, client):
    from django.utils import timezone

    from contextsim.counting.estimators import ESTIMATORS, SHOWN_FIRST
    from webapp.models import Message, RunSkeleton
    from webapp.store.actions import derivation

    folders = folders_to_watch([str(home / ".codex")], home=home, env={})
    do_watch_pass(alice, folders, {})
    (run,) = Run.objects.filter(format="codex")
    # Shown once counted by the fast estimator; the others are left for later.
    assert set(run.counting) == set(ESTIMATORS) - {SHOWN_FIRST}
    assert set(RunSkeleton.objects.filter(run=run).values_list("estimator", flat=True)) == {
        SHOWN_FIRST
    }
    client.force_login(alice)
    page = client.get(f"/runs/{run.public_id}/")
    assert page.status_code == 200 and page.context["result"].stand_in == SHOWN_FIRST
    # Still growing: not counted yet. Idle: the job counts it, and it is not pending after.
    assert derivation.pending() == []
    Run.objects.filter(pk=run.pk).update(last_append=timezone.now() - 2 * derivation.IDLE)
    assert derivation.do_derive_pending() == 1
    run.refresh_from_db()
    assert run.counting == [] and derivation.pending() == []
    assert RunSkeleton.objects.filter(run=run, revision=run.revision).count() == len(ESTIMATORS)
    counts = Message.objects.filter(run=run).values_list("counts", flat=True)
    assert all(set(c) >= set(ESTIMATORS) for c in counts)
    assert client.get(f"/runs/{run.public_id}/").context["result"].stand_in == ""


def test_the_command_says_what_it_read_and_what_it_could_not(home, alice, monkeypatch):
    monkeypatch.setenv("HOME", str(home))
    out, err = io.StringIO(), io.StringIO()
    call_command("watch", "--path", "agents", "--once", "--owner", "alice", stdout=out, stderr=err)
    assert "5 file(s): 5 read, 0 unchanged, 1 could not be read" in out.getvalue()
    assert "session-broken.json" in err.getvalue()
    with pytest.raises(CommandError, match="nowhere: no such folder"):
        call_command("watch", "--path", str(home / "nowhere"), "--once")


def test_serve_watch_shows_the_history_and_stops_with_the_server(home, tmp_path):
    import json
    import os
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    from tests.conftest import ROOT
    from tests.upstream import free_port

    port = free_port()
    env = {**os.environ, "HOME": str(home), "CONTEXTSIM_DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)
    command = [sys.executable, "manage.py", "serve", "--port", str(port), "--no-demo"]
    server = subprocess.Popen(
        [*command, "--no-worker", "--watch"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        runs: list = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and len(runs) < _expected(home):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/runs/", timeout=2) as r:
                    runs = json.loads(r.read())["runs"]
            except OSError:
                pass
            time.sleep(0.5)
        assert len(runs) == _expected(home)
        watching = subprocess.run(
            ["pgrep", "-f", "manage.py watch"], capture_output=True, text=True
        ).stdout.split()
        assert watching
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
        time.sleep(0.5)
        left = [p for p in watching if Path(f"/proc/{p}").exists()]
        states = [Path(f"/proc/{p}/stat").read_text().split()[2] for p in left]
        assert all(s == "Z" for s in states), "the watcher outlived serve"
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        subprocess.run(["pkill", "-f", f"{tmp_path}"], check=False)


def test_watch_reads_a_line_as_it_is_written_by_its_notification(home, tmp_path):
    """A whole pass only every hour: the line is read because the system said the file
    changed (watchfiles), and the other files are not read again."""
    import os
    import sqlite3
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    log = next((home / ".codex").rglob("rollout-*.jsonl"))
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[: len(lines) // 2]))
    data = tmp_path / "data"
    env = {**os.environ, "HOME": str(home), "CONTEXTSIM_DATA_DIR": str(data)}
    env.pop("DATABASE_URL", None)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    watch = subprocess.Popen(
        [*manage, "watch", "--interval", "3600"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )

    def codex_messages() -> list[int]:
        with sqlite3.connect(data / "contextsim.sqlite3") as db:
            rows = db.execute("select message_count from webapp_run where format = 'codex'")
            return [row[0] for row in rows]

    try:
        assert watch.stdout is not None
        for said in watch.stdout:
            if "file(s):" in said:
                break
        (before,) = codex_messages()
        log.write_bytes(b"".join(lines))  # the agent writes the rest
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and codex_messages() == [before]:
            time.sleep(0.1)
        (after,) = codex_messages()
        (run,) = parse_path(str(log)).runs
        assert after == len(run.messages) > before
    finally:
        watch.terminate()
        watch.wait(10)
