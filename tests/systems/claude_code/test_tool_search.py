"""Claude Code's MCP tool search as a searched setting (contextsim.systems.claude_code.
tool_search): what each ENABLE_TOOL_SEARCH value defers on a run (one fixture line per
case: the MCP definitions' size against the window), what is refused, and the
configuration it gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.deferral import Deferral
from contextsim.model import Message, Run, TextPart, ToolSpecPart
from contextsim.systems.claude_code.tool_search import (
    SETTING,
    configure,
    deferral,
    mcp_tokens,
    share_of,
)

CASES = [
    json.loads(line)
    for line in (Path(__file__).parent / "fixtures" / "tool_search_cases.jsonl").open()
    if line.strip()
]
EST = ESTIMATORS["chars4"]  # 4 characters a token: the sizes are exact


def _skeleton(mcp_chars: int):
    tools = [ToolSpecPart("Read", "r" * 400)]
    if mcp_chars:
        tools += [ToolSpecPart("mcp__gh__issue", "m" * (mcp_chars // 2))] * 2
        tools[-1] = ToolSpecPart("mcp__gh__pr", "m" * (mcp_chars - mcp_chars // 2))
    run = Run("r", (Message("system", tuple(tools)), Message("user", (TextPart("go"),))))
    return build(run, EST)


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_what_each_setting_defers(case):
    sk = _skeleton(case["mcp_chars"])
    assert mcp_tokens(sk) == case["mcp_chars"] // 4
    found = deferral({SETTING: case["setting"]}, sk, case["window"])
    assert found == (Deferral(("mcp__*",)) if case["defers"] else None)


@pytest.mark.parametrize("bad", ["yes", "auto:", "auto:ten", "manual:5", ""])
def test_a_value_claude_code_does_not_take_is_named(bad):
    with pytest.raises(ValueError, match=f"enable_tool_search: expected .* got {bad!r}"):
        share_of(bad)


def test_the_configuration_is_the_environment_and_settings_json():
    shell, settings = configure({SETTING: "auto:20"})
    assert shell.text == "export ENABLE_TOOL_SEARCH=auto:20\n"
    assert "pass 20% of the window" in shell.notes[0]
    assert json.loads(settings.text) == {"env": {"ENABLE_TOOL_SEARCH": "auto:20"}}
