"""LangChain's and Deep Agents' policies through the dashboard: each renders, simulates
with its parameters and shows its middleware Python in the "use in your agent" panel."""

from __future__ import annotations

import json

import pytest

from contextsim import model as core
from contextsim.ingest.base import ParsedFile
from webapp.models import Visibility
from webapp.store.actions.saving import do_save_runs


@pytest.fixture
def tool_run(alice):
    """A task, then 12 rounds of one call and a 4,000-character result."""
    messages = [core.Message("user", (core.TextPart("read the files"),))]
    for n in range(12):
        call = core.ToolCallPart(f"c{n}", "read_file", '{"path": "a.txt"}')
        messages.append(core.Message("assistant", (core.TextPart("reading"), call)))
        messages.append(core.Message("tool", (core.ToolResultPart(f"c{n}", "r" * 4_000),)))
    messages.append(core.Message("assistant", (core.TextPart("done"),)))
    run = core.Run("tools", tuple(messages), model="claude-sonnet-4-6")
    parsed = ParsedFile("native", [run])
    (saved,) = do_save_runs(
        parsed, owner=alice, visibility=Visibility.PRIVATE, estimators=("chars4",)
    )
    return saved


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        (
            "policy=langchain_summarization&trigger_tokens=5000&keep_messages=4",
            "trigger=(&#x27;tokens&#x27;, 5000)",
        ),
        ("policy=langchain_clear_tool_uses&trigger=3000&keep=2", "trigger=3000"),
        ("policy=langchain_trim&budget=6000", "MAX_TOKENS = 6000"),
        ("policy=deepagents&tool_token_limit=500", "tool_token_limit_before_evict=500"),
    ],
)
def test_each_policy_renders_simulates_and_exports(tool_run, alice_client, query, shown):
    page = alice_client.get(f"/runs/{tool_run.public_id}/?{query}&estimator=chars4")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="use-in-agent"' in html
    assert shown in html


def test_summarization_shrinks_what_is_sent(tool_run, alice_client):
    base = f"/runs/{tool_run.public_id}/export.json?estimator=chars4"
    none = json.loads(alice_client.get(f"{base}&policy=none").content)
    query = "policy=langchain_summarization&trigger_tokens=5000&keep_messages=4"
    summarized = json.loads(alice_client.get(f"{base}&{query}").content)
    # No trigger (LangChain's default): nothing is summarized.
    default = json.loads(alice_client.get(f"{base}&policy=langchain_summarization").content)
    assert [s["sent_tokens_estimated"] for s in default["steps"]] == [
        s["sent_tokens_estimated"] for s in none["steps"]
    ]
    # 4,000-character results (1,000 tokens each under chars4): once the messages
    # count 5,000 tokens, all but the newest 4 are summarized.
    assert (
        summarized["steps"][-1]["sent_tokens_estimated"]
        < none["steps"][-1]["sent_tokens_estimated"] // 2
    )


def test_a_bad_summarization_parameter_is_refused_with_its_name(tool_run, alice_client):
    page = alice_client.get(
        f"/runs/{tool_run.public_id}/?policy=langchain_summarization&keep_fraction=3"
    )
    assert page.status_code == 400
    assert "keep_fraction" in page.content.decode()
