"""Sessions as trees: a Claude Code session and its subagents' files are one collection
however they arrive: one upload of several files, separate uploads in either order, a
zip of the project folder, or the API."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.test import Client

from tests.systems.claude_code.test_format import (
    SESSION,
    assistant,
    call,
    jsonl,
    sidechain,
    text,
    usage,
    user,
)
from tests.web.test_import_service import import_bytes
from webapp.access.services.tokens import create_token
from webapp.models import Run

pytestmark = pytest.mark.django_db

MAIN = jsonl(
    user("u1", "fix the bug"),
    assistant(
        "a1",
        "msg_1",
        [call("task1", "Task", {"prompt": "find the bug"})],
        "u1",
        usage(5, 0, 900, 9),
    ),
    user("u2", [{"type": "tool_result", "tool_use_id": "task1", "content": "found it"}], "a1"),
    assistant("a2", "msg_2", [text("fixed")], "u2", usage(5, 900, 50, 9)),
)
AGENT = jsonl(
    sidechain(user("s1", "find the bug"), agentId="a7"),
    sidechain(
        assistant("s2", "msg_9", [text("found it")], "s1", usage(1, 0, 300, 4)), agentId="a7"
    ),
)


def _collection_of_all():
    runs = list(Run.objects.order_by("subagent", "id"))
    assert len(runs) == 2
    assert runs[0].collection is not None and runs[0].collection == runs[1].collection
    main, agent = runs
    assert not main.subagent and agent.subagent
    assert main.collection.title == main.title
    return main, agent


@pytest.mark.parametrize("order", ["main first", "subagent first"])
def test_separate_uploads_of_a_session_and_its_subagent_are_one_collection(alice, order):
    files = [("s.jsonl", MAIN), ("subagents/agent-a7.jsonl", AGENT)]
    for name, data in files if order == "main first" else files[::-1]:
        assert import_bytes(alice, name, data).status == "done"
    _collection_of_all()


def test_a_zip_of_the_project_folder_is_one_collection_and_skips_other_files(alice):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"project/{SESSION}.jsonl", MAIN)
        archive.writestr(f"project/{SESSION}/subagents/agent-a7.jsonl", AGENT)
        archive.writestr("project/.DS_Store", b"\x00\x01")
        archive.writestr("project/notes.txt", "not a log")
    job = import_bytes(alice, "project.zip", buffer.getvalue())
    assert job.status == "done" and job.format == "claude-code"
    assert any("2 file(s) that are not logs left out" in w for w in job.warnings)
    _collection_of_all()


def test_a_zip_with_a_bad_log_saves_nothing_and_names_it(alice):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("p/a.jsonl", MAIN)
        archive.writestr("p/b.jsonl", b'{"type": "user"\n{"x": 1}\n')
    job = import_bytes(alice, "p.zip", buffer.getvalue())
    assert job.status == "failed" and "p.zip/p/b.jsonl" in job.error
    assert not Run.objects.exists()


def test_runs_created_by_the_api_in_separate_calls_join_their_session(alice):
    key = create_token(alice, "agent")[1]
    api = Client(headers={"Authorization": f"Bearer {key}"})
    for data in (MAIN, AGENT):
        response = api.post(
            "/api/runs/?format=claude-code", data, content_type="application/x-ndjson"
        )
        assert response.status_code == 201, response.content
    _collection_of_all()


def test_another_owners_session_is_never_joined(alice, bob):
    import_bytes(alice, "s.jsonl", MAIN)
    import_bytes(bob, "agent.jsonl", AGENT)
    assert all(r.collection is None for r in Run.objects.all())


def test_the_call_that_started_a_subagent_links_to_it_and_it_links_back(alice, alice_client):
    from django.urls import reverse

    import_bytes(alice, "s.jsonl", MAIN)
    import_bytes(alice, "subagents/agent-a7.jsonl", AGENT)
    main, agent = _collection_of_all()
    dashboard = alice_client.get(reverse("run", args=[main.public_id])).content.decode()
    agent_url = reverse("run", args=[agent.public_id])
    assert f'href="{agent_url}" title="the subagent this call started"' in dashboard
    step = alice_client.get(reverse("step", args=[main.public_id, 0])).content.decode()
    assert "Started the subagent" in step and agent_url in step
    back = alice_client.get(agent_url).content.decode()
    assert f'Started by <a href="{reverse("step", args=[main.public_id, 0])}">step 0 of' in back
    tree = alice_client.get(reverse("collection", args=[main.collection.public_id]))
    html = tree.content.decode()
    nodes = html.split('id="session-tree">')[1].split("</ul>")[0]
    assert nodes.index(main.title) < nodes.index(agent.title)
    assert 'class="depth-1"' in nodes and "started at step 0" in nodes


def test_a_subagent_the_viewer_cannot_see_is_not_linked(alice, bob):
    from django.urls import reverse

    from webapp.models import Visibility

    import_bytes(alice, "s.jsonl", MAIN)
    import_bytes(alice, "subagents/agent-a7.jsonl", AGENT)
    main, agent = _collection_of_all()
    Run.objects.filter(pk=main.pk).update(visibility=Visibility.PUBLIC)
    client = Client()
    client.force_login(bob)
    dashboard = client.get(reverse("run", args=[main.public_id])).content.decode()
    assert reverse("run", args=[agent.public_id]) not in dashboard
