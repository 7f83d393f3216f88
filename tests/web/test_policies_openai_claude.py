"""The Responses API policies and Claude Code's microcompaction through the web: the
dashboard lists them with their parameters, simulates them, and the step inspector
shows what stands in place of what they removed."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from contextsim.systems.claude_code.microcompact import CLEARED
from contextsim.systems.openai_api.policies import COMPACTION_NOTE
from tests.web.test_import_service import import_bytes
from webapp.models import Run

pytestmark = pytest.mark.django_db
START = 1_700_000_000


def timed_run(rounds: int = 9, idle_before: int = 8) -> bytes:
    """A native run of Read calls a minute apart, with two idle hours before the result
    of call `idle_before`."""
    clock = START
    messages = [
        {"role": "system", "content": "be careful", "timestamp": clock},
        {"role": "user", "content": "go", "timestamp": clock},
    ]
    for i in range(rounds):
        clock += 60
        call = {"type": "tool_call", "id": f"c{i}", "name": "Read", "arguments": {"f": i}}
        messages.append({"role": "assistant", "content": [call], "timestamp": clock})
        clock += 60 + (7_200 if i == idle_before else 0)
        result = {"type": "tool_result", "call_id": f"c{i}", "text": f"{i} " + "y" * 4_000}
        messages.append({"role": "tool", "content": [result], "timestamp": clock})
    messages.append({"role": "assistant", "content": "done", "timestamp": clock + 60})
    return json.dumps(
        {"contextsim": 1, "runs": [{"title": "timed", "messages": messages}]}
    ).encode()


@pytest.fixture
def run(alice) -> Run:
    import_bytes(alice, "timed.json", timed_run())
    return Run.objects.get(title="timed")


def page(client: Client, name: str, run: Run, *args, **query) -> str:
    response = client.get(reverse(name, args=[run.public_id, *args]), query)
    assert response.status_code == 200
    return response.content.decode()


def test_the_dashboard_offers_the_new_policies_and_labels_microcompaction_approximate(
    alice_client, run
):
    html = page(alice_client, "run", run, policy="claude_code_microcompact")
    assert "claude_code_microcompact: approximate" in html
    assert 'value="openai_truncation_auto"' in html and 'value="openai_compaction"' in html
    assert 'name="gap_minutes"' in html and 'name="keep_recent"' in html


def test_microcompaction_clears_old_results_after_the_logged_idle_gap(alice_client, run):
    last = run.request_count - 1
    query = {"policy": "claude_code_microcompact", "estimator": "chars4"}
    assert CLEARED in page(alice_client, "step", run, last, **query)
    assert CLEARED not in page(alice_client, "step", run, last - 2, **query)
    assert CLEARED not in page(alice_client, "step", run, last, **query, gap_minutes="180")


def test_compaction_and_truncation_simulate_with_their_parameters(alice_client, run):
    last = run.request_count - 1
    compaction = {"policy": "openai_compaction", "estimator": "chars4"}
    html = page(alice_client, "step", run, last, **compaction, compact_threshold="3000")
    assert COMPACTION_NOTE in html
    assert COMPACTION_NOTE not in page(alice_client, "step", run, last, **compaction)
    truncation = {"policy": "openai_truncation_auto", "estimator": "chars4"}
    html = page(alice_client, "run", run, **truncation, hard_limit="5000", budget="5000")
    assert 'name="reserved_output"' in html
    step = page(alice_client, "step", run, last, **truncation, hard_limit="5000", budget="5000")
    assert "messages not sent (truncated)" in step
    untouched = page(alice_client, "step", run, last, **truncation, hard_limit="900000")
    assert "messages not sent" not in untouched


def test_the_use_in_your_agent_panel_gives_the_chosen_parameters(alice_client, run):
    html = page(alice_client, "run", run, policy="openai_compaction", compact_threshold="123456")
    assert 'id="snippet-openai-responses"' in html
    assert "&quot;compact_threshold&quot;: 123456" in html
    html = page(alice_client, "run", run, policy="claude_code_auto_compact", buffer="23000")
    assert "export CLAUDE_CODE_AUTO_COMPACT_WINDOW=" in html
    html = page(alice_client, "run", run, policy="claude_code_microcompact")
    assert "No environment variable or settings.json key" in html
