"""`watch --to`: a machine's agent folders sent to a real server (pytest-django's live
server) through its API: every run arrives once, labelled with its machine, whatever is
retried or restarted; a file that grows sends only what it gained; the counts are the
logs' own (parsed here from the files)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from contextsim.cli.main import main
from contextsim.cli.send_history import Post, Sender, SendError, http_post
from contextsim.ingest.agent_folders import folders_to_watch
from contextsim.ingest.detect import parse_path
from tests.web.test_watch import home  # noqa: F401 (a fixture: the agents' folders)
from webapp.access.services.tokens import create_token
from webapp.models import Message, Run

pytestmark = pytest.mark.django_db(transaction=True)


def _logged(root: Path) -> dict[str, int]:
    """Each readable log's runs: messages by session id, parsed from the files."""
    out = {}
    for path in sorted(root.rglob("*.json*")):
        try:
            runs = parse_path(str(path)).runs
        except Exception:
            continue
        for position, run in enumerate(runs):
            out[f"{path.resolve()}#{run.session_id or position}"] = len(run.messages)
    return out


def _stored(machine: str) -> dict[str, int]:
    return {
        r.stream_key.split(":", 1)[1]: r.message_count for r in Run.objects.filter(machine=machine)
    }


def test_two_machines_send_their_sessions_once_each(live_server, alice, home):  # noqa: F811
    key = create_token(alice, "laptop")[1]
    folders = folders_to_watch([], home=home, env={})
    post = http_post(live_server.url, key)
    sent = Sender(post, "laptop").send_pass(folders)
    assert [p.name for p, _ in sent.errors] == ["session-broken.json"]
    assert _stored("laptop") == _logged(home)
    assert sent.messages == sum(_logged(home).values())
    assert all(r.owner_id == alice.pk for r in Run.objects.all())
    # Each run keeps its log's facts: its agent's format (rules, prices), window, project.
    parsed = {
        f"{p.resolve()}#{r.session_id or i}": r
        for p in home.rglob("*.json*")
        if "broken" not in p.name
        for i, r in enumerate(parse_path(str(p)).runs)
    }
    for stored in Run.objects.filter(machine="laptop"):
        run = parsed[stored.stream_key.split(":", 1)[1]]
        facts = (stored.format, stored.context_window, stored.project, stored.subagent)
        assert facts == (run.format, run.context_window, run.project, run.subagent)
    # The same folders from another machine are that machine's runs.
    Sender(post, "desktop").send_pass(folders)
    assert _stored("desktop") == _logged(home)
    # Restarted: nothing is sent again, nothing is stored twice.
    again = Sender(post, "laptop").send_pass(folders)
    assert again.messages == 0 and not [e for e in again.errors if "broken" not in str(e[0])]
    assert Run.objects.filter(machine="laptop").count() == len(_logged(home))
    agent = Run.objects.filter(machine="laptop", subagent=True).first()
    assert agent is not None and agent.collection_id is not None
    # The overview has a row per machine, each opening that machine's sessions.
    from django.test import Client

    client = Client()
    client.force_login(alice)
    rows = {g.key: g for g, _ in client.get("/overview/", {"by": "machine"}).context["rows"]}
    assert set(rows) == {"laptop", "desktop"}
    assert rows["laptop"].total == rows["desktop"].total > 0
    laptop = client.get("/overview/", {"by": "session", "machine": "laptop"}).context["total"]
    assert laptop.runs == set(Run.objects.filter(machine="laptop").values_list("pk", flat=True))


def test_a_growing_file_sends_what_it_gained_and_a_retry_changes_nothing(
    live_server,
    alice,
    home,  # noqa: F811
):
    key = create_token(alice, "laptop")[1]
    log = next((home / ".codex").rglob("rollout-*.jsonl"))
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[: len(lines) // 2]))
    folders = folders_to_watch([str(home / ".codex")], home=home, env={})
    real = http_post(live_server.url, key)
    bodies: list[dict] = []
    lost = {"next": False}

    def flaky(path: str, body: bytes, headers: dict[str, str]):
        """Loses the answer to an append once, after the server made it."""
        status, said = real(path, body, headers)
        if path.endswith("/messages/"):
            bodies.append(json.loads(body))
            if lost["next"]:
                lost["next"] = False
                raise SendError("connection reset")
        return status, said

    sender = Sender(flaky, "laptop")
    first = sender.send_pass(folders)
    assert first.errors == [] and first.read == 1, first
    (run,) = Run.objects.filter(format="codex")
    before = run.message_count
    log.write_bytes(b"".join(lines))  # the agent wrote the rest
    lost["next"] = True
    failed = sender.send_pass(folders)
    assert failed.errors and "connection reset" in failed.errors[0][1]
    retried = sender.send_pass(folders)  # the file is read again: sent again, same key
    assert retried.errors == []
    (whole,) = parse_path(str(log)).runs
    run.refresh_from_db()
    assert run.message_count == len(whole.messages) > before
    assert Message.objects.filter(run=run).count() == len(whole.messages)
    # Only what the file gained was sent.
    assert bodies[-1]["start"] == before


def test_a_bad_key_is_named_and_the_command_runs_once(live_server, alice, home, monkeypatch):  # noqa: F811
    bad: Post = http_post(live_server.url, "not-a-key")
    folders = folders_to_watch([str(home / ".codex")], home=home, env={})
    sent = Sender(bad, "laptop").send_pass(folders)
    assert sent.errors and "401" in sent.errors[0][1]
    assert Run.objects.count() == 0
    key = create_token(alice, "cli")[1]
    out, err = io.StringIO(), io.StringIO()
    argv = ["watch", "--to", live_server.url, "--key", key, "--machine", "ci", "--once"]
    with redirect_stdout(out), redirect_stderr(err):
        code = main([*argv, "--path", str(home / ".codex")])
    assert code == 0, err.getvalue()
    assert "0 could not be sent" in out.getvalue()
    assert Run.objects.filter(machine="ci").count() == 1
