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

from contextsim.ingest.detect import parse_path
from tests.conftest import corpus_root
from webapp.ingest.watch.folders import folders_to_watch
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
