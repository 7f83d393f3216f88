"""Inspect AI exports: each snippet, executed with the installed inspect-ai, builds the
chosen Compaction* strategy with the chosen arguments and a react() agent using it."""

from __future__ import annotations

import pytest
from inspect_ai.model import CompactionAuto, CompactionEdit, CompactionSummary, CompactionTrim

from contextsim.registry import ExportContext, export
from contextsim.systems.inspect_ai.policies import InspectParams


def run(params: InspectParams) -> dict[str, object]:
    (snippet,) = export("inspect_compaction", ExportContext(params, 100_000, 200_000))
    namespace: dict[str, object] = {}
    exec(snippet.text, namespace)
    assert callable(namespace["agent"])
    return namespace


def test_trim_builds_compaction_trim_with_the_chosen_share_and_threshold():
    built = run(InspectParams(strategy="trim", preserve=0.6, threshold=0.75))["compaction"]
    assert isinstance(built, CompactionTrim)
    assert (built.preserve, built.threshold) == (0.6, 0.75)


def test_edit_builds_compaction_edit_with_the_chosen_keeps_and_exclusions():
    params = InspectParams(
        strategy="edit", keep_tool_uses=5, keep_thinking_turns=None, exclude_tools=("grep",)
    )
    built = run(params)["compaction"]
    assert isinstance(built, CompactionEdit)
    assert (built.keep_tool_uses, built.keep_thinking_turns) == (5, "all")
    assert built.exclude_tools == ["grep"]


@pytest.mark.parametrize(
    ("strategy", "cls"), [("summary", CompactionSummary), ("auto", CompactionAuto)]
)
def test_summary_strategies_build_their_class_with_a_token_threshold(strategy, cls):
    built = run(InspectParams(strategy=strategy, threshold=150_000))["compaction"]
    assert isinstance(built, cls)
    # Above 1.0 the threshold is tokens: an int, as Inspect reads it.
    assert built.threshold == 150_000 and isinstance(built.threshold, int)
