"""Deferring tools' definitions (Anthropic's tool search): the skeleton a what-if sends,
on hand-made runs, random ones (Hypothesis) and a real capture."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.counting.skeleton import KIND_INDEX
from contextsim.engine.deferral import (
    SEARCH_TOOL,
    Deferral,
    deferred,
    defined_tools,
    parse_deferral,
)
from contextsim.engine.simulate import simulate
from contextsim.ingest.detect import parse_path
from contextsim.model import (
    Compaction,
    Message,
    Run,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpecPart,
)
from contextsim.registry import POLICIES
from tests.conftest import corpus_files

EST = ESTIMATORS["chars4"]


def spec(name: str, chars: int) -> ToolSpecPart:
    return ToolSpecPart(name, "d" * chars)


def calling(n: int, name: str) -> list[Message]:
    return [
        Message("assistant", (ToolCallPart(f"c{n}", name, "{}"),)),
        Message("tool", (ToolResultPart(f"c{n}", "r" * 40),)),
    ]


def defined_run(calls: list[str], compact_before: int | None = None) -> Run:
    tools = Message("system", (spec("Read", 400), spec("mcp__gh__issue", 800), spec("x", 80)))
    body: list[Message] = [tools, Message("user", (TextPart("go"),))]
    for n, name in enumerate(calls):
        body += calling(n, name)
    body.append(Message("assistant", (TextPart("done"),)))
    compactions = () if compact_before is None else (Compaction(compact_before),)
    return Run("r", tuple(body), compactions=compactions)


def test_the_skeleton_holds_each_definition_and_they_add_up_to_their_message():
    sk = build(defined_run(["Read"]), EST)
    assert sk.definitions == ((0, "Read", 100), (0, "mcp__gh__issue", 200), (0, "x", 20))
    assert sk.tokens[0] == 320 + MESSAGE_OVERHEAD


def test_a_deferred_tool_leaves_the_tool_list_and_is_loaded_where_first_called():
    sk = build(defined_run(["Read", "mcp__gh__issue", "mcp__gh__issue"]), EST)
    after = deferred(sk, Deferral(("mcp__gh__*",), search_tokens=50))
    assert after.tokens[0] == sk.tokens[0] - 200 + 50
    first_call = 4  # tools, user, Read call, Read result, then the first mcp call
    assert after.call_names[first_call] == ("mcp__gh__issue",)
    assert after.tokens[first_call] == sk.tokens[first_call] + 200
    # The second call finds it in the history: nothing is loaded again.
    assert after.tokens[6] == sk.tokens[6]
    changed = [i for i in range(sk.size) if after.tokens[i] != sk.tokens[i]]
    assert changed == [0, first_call]
    assert (0, SEARCH_TOOL, 50) in after.definitions
    assert "mcp__gh__issue" not in defined_tools(after)


def test_a_logged_compaction_makes_the_next_call_load_the_definition_again():
    sk = build(defined_run(["x", "x", "x"], compact_before=5), EST)
    after = deferred(sk, Deferral(("x",), search_tokens=0))
    loads = [i for i in range(1, sk.size) if after.tokens[i] != sk.tokens[i]]
    assert loads == [2, 6]  # the first call, and the first one after the compaction


def test_a_tool_never_called_costs_only_the_search_tool():
    sk = build(defined_run(["Read"]), EST)
    after = deferred(sk, Deferral(("x", "mcp__gh__issue")))
    assert sum(after.tokens) == sum(sk.tokens) - 220 + 500


@pytest.mark.parametrize(
    "text, error",
    [
        ("mcp__*__x", "may only end a pattern"),
        (",".join(f"t{i}" for i in range(201)), "at most 200"),
    ],
)
def test_a_bad_list_of_tools_is_refused_naming_what_is_wrong(text, error):
    with pytest.raises(ValueError, match=error):
        parse_deferral(text)


def test_a_pattern_that_matches_nothing_names_what_the_log_defines():
    sk = build(defined_run(["Read"]), EST)
    with pytest.raises(ValueError, match=r"'Grep' matches no tool .*Read, mcp__gh__issue, x"):
        deferred(sk, Deferral(("Grep",)))


def test_a_log_without_definitions_has_nothing_to_defer():
    run = Run("r", (Message("user", (TextPart("hi"),)), Message("assistant", (TextPart("ok"),))))
    with pytest.raises(ValueError, match="holds no tool definitions"):
        deferred(build(run, EST), Deferral(("*",)))


def test_as_logged_replays_what_was_sent_and_takes_no_deferral():
    sk = build(defined_run(["Read"]), EST)
    with pytest.raises(ValueError, match="choose a policy"):
        simulate(
            sk,
            POLICIES["as_logged"],
            budget=10_000,
            hard_limit=20_000,
            count=EST.count,
            deferral=Deferral(("x",)),
        )


def test_every_request_of_a_what_if_sends_the_deferred_skeleton():
    sk = build(defined_run(["Read", "mcp__gh__issue"]), EST)
    deferral = Deferral(("mcp__gh__issue",), search_tokens=30)
    limits = {"budget": 100_000, "hard_limit": 200_000, "count": EST.count}
    before = simulate(sk, POLICIES["none"], **limits)
    after = simulate(sk, POLICIES["none"], deferral=deferral, **limits)
    loaded = 4
    for a, b in zip(after.records, before.records, strict=True):
        expected = b.sent - 200 + 30 + (200 if a.end > loaded else 0)
        assert a.sent == expected


NAMES = st.sampled_from(["a", "b", "mcp__s__c", "mcp__s__d"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(NAMES, max_size=12),
    st.lists(NAMES, min_size=1, max_size=3, unique=True),
    st.integers(0, 300),
    st.one_of(st.none(), st.integers(1, 20)),
)
def test_deferring_moves_exactly_the_definitions_and_the_loads(calls, chosen, search, compact):
    run = Run(
        "r",
        (
            Message(
                "system",
                tuple(
                    spec(n, 40 * (k + 1))
                    for k, n in enumerate(["a", "b", "mcp__s__c", "mcp__s__d"])
                ),
            ),
            Message("user", (TextPart("go"),)),
            *[m for n, name in enumerate(calls) for m in calling(n, name)],
        ),
        compactions=() if compact is None else (Compaction(compact),),
    )
    sk = build(run, EST)
    after = deferred(sk, Deferral(tuple(chosen), search))
    sizes = defined_tools(sk)
    removed = sum(sizes[n] for n in chosen)
    marks = [] if compact is None else [compact]
    loads = {
        (sum(1 for m in marks if m <= j), name)
        for j, names in enumerate(sk.call_names)
        for name in names
        if name in chosen
    }
    assert sum(after.tokens) == sum(sk.tokens) - removed + search + sum(sizes[n] for _, n in loads)
    # Nothing but the tool list and assistant messages that call a deferred tool changes.
    for i in range(1, sk.size):
        if after.tokens[i] != sk.tokens[i]:
            assert set(sk.call_names[i]) & set(chosen)
    assert sum(t for _, _, t in after.definitions) + MESSAGE_OVERHEAD == after.tokens[0]


CAPTURES = corpus_files("raw_api", "hanq_redacted_log-2026-06-15-09-15-50.jsonl")


@pytest.mark.parametrize("path", CAPTURES)
def test_a_captures_mcp_server_is_deferred_by_its_definitions_as_sent(path):
    o200k = ESTIMATORS["o200k"]
    definitions: dict[str, str] = {}
    for line in path.open("rb"):
        body = json.loads(line).get("request", {}).get("body")
        if isinstance(body, dict):
            for tool in body.get("tools") or []:
                definitions.setdefault(
                    tool["name"], json.dumps(tool, ensure_ascii=False, separators=(",", ":"))
                )
    server = {n: d for n, d in definitions.items() if n.startswith("mcp__codegraph__")}
    assert server  # the file's Claude Code requests define codegraph's tools
    checked = 0
    for run in parse_path(str(path)).runs:
        sk = build(run, o200k)
        if not set(server) <= set(defined_tools(sk)):
            continue
        after = deferred(sk, parse_deferral("mcp__codegraph__*"))
        tools = sk.kinds.index(KIND_INDEX["tools"])
        removed = sum(o200k.count(d) for d in server.values())
        assert after.tokens[tools] == sk.tokens[tools] - removed + 500
        checked += 1
    assert checked


def test_a_removed_tool_leaves_the_list_with_no_search_tool_and_no_load():
    sk = build(defined_run(["Read"]), EST)
    after = deferred(sk, Deferral(removed=("x",)))
    assert after.tokens[0] == sk.tokens[0] - 20
    assert after.tokens[1:] == sk.tokens[1:]
    assert SEARCH_TOOL not in defined_tools(after) and "x" not in defined_tools(after)
    both = deferred(sk, Deferral(("mcp__gh__*",), 50, ("x",)))
    assert both.tokens[0] == sk.tokens[0] - 20 - 200 + 50


def test_a_tool_the_log_calls_cannot_be_removed_and_the_step_is_named():
    sk = build(defined_run(["Read", "x"]), EST)
    with pytest.raises(ValueError, match=r"remove: x is called at step 1: .*defer it instead"):
        deferred(sk, Deferral(removed=("x",)))
    with pytest.raises(ValueError, match="remove: 'Grep' matches no tool"):
        deferred(sk, Deferral(removed=("Grep",)))


def test_both_lists_are_checked_and_named():
    assert parse_deferral("", removed="") is None
    found = parse_deferral("a, b", removed="c")
    assert found == Deferral(("a", "b"), 500, ("c",))
    with pytest.raises(ValueError, match="remove: 'a\\*b'"):
        parse_deferral("", removed="a*b")
