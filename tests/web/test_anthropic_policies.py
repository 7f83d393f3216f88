"""Anthropic's API mechanisms through the dashboard: each policy renders, simulates with
its parameters and shows its export; a skeleton stored before thinking was counted is
built again."""

from __future__ import annotations

import json

import pytest

from contextsim import model as core
from contextsim.counting.skeleton import LAYOUT
from contextsim.ingest.base import ParsedFile
from webapp.dashboard.trace import THINKING_NOTE, _change
from webapp.models import RunSkeleton, Visibility
from webapp.store import reads as derived
from webapp.store.actions.saving import do_save_runs
from webapp.store.cache import CACHE


@pytest.fixture
def thinking_run(alice):
    """Two user turns answered with 8,000 characters of thinking each (2,000 tokens
    under chars4), the second reading a result."""
    messages = (
        core.Message("user", (core.TextPart("question one"),)),
        core.Message("assistant", (core.ThinkingPart("t" * 8_000), core.TextPart("answer"))),
        core.Message("user", (core.TextPart("question two"),)),
        core.Message(
            "assistant",
            (core.ThinkingPart("t" * 8_000), core.ToolCallPart("c1", "read", "{}")),
        ),
        core.Message("user", (core.ToolResultPart("c1", "r" * 4_000),)),
    )
    run = core.Run("thinking", messages, model="claude-opus-4-6")
    parsed = ParsedFile("native", [run])
    (saved,) = do_save_runs(
        parsed, owner=alice, visibility=Visibility.PRIVATE, estimators=("chars4",)
    )
    return saved


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("policy=anthropic_clear_thinking&keep=2", "clear_thinking_20251015"),
        (
            "policy=anthropic_context_editing&keep_thinking=1&trigger=60000",
            "clear_tool_uses_20250919",
        ),
        ("policy=anthropic_compaction&trigger=50000&summary_tokens=900", "compact_20260112"),
        ("policy=anthropic_clear_tool_uses&keep=2", "context-management-2025-06-27"),
    ],
)
def test_each_policy_renders_simulates_and_exports(thinking_run, alice_client, query, shown):
    page = alice_client.get(f"/runs/{thinking_run.public_id}/?{query}&estimator=chars4")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="use-in-agent"' in html
    assert shown in html


def test_clearing_thinking_shows_in_the_exported_step_records(thinking_run, alice_client):
    base = f"/runs/{thinking_run.public_id}/export.json?estimator=chars4"
    none = json.loads(alice_client.get(f"{base}&policy=none").content)
    cleared = json.loads(alice_client.get(f"{base}&policy=anthropic_clear_thinking").content)
    # The last request (after the second question) no longer sends turn one's thinking:
    # 8,000 characters, 2,000 tokens under chars4.
    assert (
        none["steps"][-1]["sent_tokens_estimated"] - cleared["steps"][-1]["sent_tokens_estimated"]
        == 2_000
    )
    assert none["steps"][1]["sent_tokens_estimated"] == cleared["steps"][1]["sent_tokens_estimated"]


def test_a_bad_parameter_is_refused_with_its_name(thinking_run, alice_client):
    page = alice_client.get(
        f"/runs/{thinking_run.public_id}/?policy=anthropic_compaction&trigger=1000"
    )
    assert page.status_code == 400
    assert "50,000" in page.content.decode()


def test_a_skeleton_stored_in_an_older_layout_is_built_again(thinking_run):
    from webapp.store.actions import derivation

    row = RunSkeleton.objects.get(run=thinking_run, estimator="chars4")
    assert row.data["layout"] == LAYOUT
    old = dict(row.data)
    del old["layout"]
    del old["thinking_tokens"]
    RunSkeleton.objects.filter(pk=row.pk).update(data=old)
    CACHE.clear()
    sk = derived.skeleton_of(thinking_run, "chars4")  # built from the messages, not stored
    assert sk.thinking_tokens[1] == 2_000
    assert "layout" not in RunSkeleton.objects.get(run=thinking_run, estimator="chars4").data
    assert thinking_run in derivation.pending()  # the periodic job stores it again
    derivation.do_derive_pending()
    assert RunSkeleton.objects.get(run=thinking_run, estimator="chars4").data["layout"] == LAYOUT
    assert thinking_run not in derivation.pending()


def test_the_step_inspector_shows_a_message_sent_without_its_thinking(thinking_run, alice_client):
    url = (
        f"/runs/{thinking_run.public_id}/steps/2/?estimator=chars4&policy=anthropic_clear_thinking"
    )
    html = alice_client.get(url).content.decode()
    # Turn one's answer is sent without its 8,000 characters of thinking, its text kept:
    # said so, not shown as a tool result replaced by a note.
    assert THINKING_NOTE in html
    assert "[cleared: the tool result was replaced" not in html
    assert "answer\n\n--- the thinking left out ---\n" + "t" * 100 in html
    assert "k→c, thinking cleared" in html


def test_a_cleared_message_whose_thinking_is_cleared_later_is_a_change():
    assert _change(("c", True, False), ("c", True, True)) == "c→c, thinking cleared"
    assert _change(("k", False, False), ("c", True, False)) == "k→c, body cleared"
    assert _change(("c", True, True), ("c", True, True)) == ""
    assert _change(("c", True, False), ("k", False, False)) == "c→k"
