"""The Claude Code exports: the environment variables (sh) and settings.json parse to
values that, through Claude Code's published formula (threshold = auto-compact window -
min(max output, 20,000) - 13,000), give the threshold the simulation uses; and
microcompaction, which nothing sets, says so."""

from __future__ import annotations

import json

import pytest

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.policy import Context
from contextsim.model import Message, Run, TextPart
from contextsim.registry import ExportContext, Snippet, export
from contextsim.systems.claude_code.microcompact import MicrocompactParams
from contextsim.systems.claude_code.policies import ClaudeCodeParams, ClaudeCodePlanner
from contextsim.truth.prices import model_facts

EST = ESTIMATORS["chars4"]
MODEL = "claude-sonnet-4-5"


def shell_env(snippet: Snippet) -> dict[str, str]:
    """The `export NAME=value` lines of a shell snippet (every other line a comment)."""
    env = {}
    for line in snippet.text.splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = value
        else:
            assert not line.strip() or line.startswith("#"), line
    return env


def snippets(params: ClaudeCodeParams, model: str = MODEL) -> dict[str, Snippet]:
    found = export("claude_code_auto_compact", ExportContext(params, 150_000, 1_000_000, model))
    return {s.target: s for s in found}


def real_threshold(env: dict[str, str]) -> int:
    """Claude Code's threshold for these variables, on a model whose max output is over
    20,000 (public analyses: anthropics/claude-code issues 31806, 27037)."""
    reserve = min(int(env.get("CLAUDE_CODE_MAX_OUTPUT_TOKENS", 32_000)), 20_000)
    return int(env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"]) - reserve - 13_000


def simulated_threshold(params: ClaudeCodeParams, model: str = MODEL) -> int:
    run = Run("r", (Message("user", (TextPart("go"),)),), model=model, harness_version="2.1.3")
    sk = build(run, EST)
    return ClaudeCodePlanner(Context(sk, 1, 1, EST.count), params).threshold


@pytest.mark.parametrize(
    "params",
    [
        ClaudeCodeParams(),
        ClaudeCodeParams(buffer=23_000),
        ClaudeCodeParams(window=150_000),
        ClaudeCodeParams(max_output=8_000),
        ClaudeCodeParams(capped_output=False),
    ],
)
def test_the_exported_window_gives_claude_code_the_simulated_threshold(params):
    found = snippets(params)
    env = shell_env(found["claude-code-env"])
    assert real_threshold(env) == simulated_threshold(params)
    settings = json.loads(found["claude-code-settings"].text)
    assert settings["autoCompactWindow"] == int(env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"])
    assert settings.get("env", {}) == {
        k: v for k, v in env.items() if k != "CLAUDE_CODE_AUTO_COMPACT_WINDOW"
    }


def test_the_default_on_a_200k_model_is_its_window():
    facts = model_facts(MODEL)
    assert facts is not None and facts.context_window == 200_000
    env = shell_env(snippets(ClaudeCodeParams())["claude-code-env"])
    assert env == {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200000"}
    assert real_threshold(env) == 200_000 - 20_000 - 13_000


def test_a_reserve_under_20000_needs_the_max_output_variable_and_says_what_it_costs():
    found = snippets(ClaudeCodeParams(max_output=8_000))
    assert shell_env(found["claude-code-env"])["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "8000"
    assert any("caps the length of every answer" in n for n in found["claude-code-env"].notes)


def test_a_threshold_above_what_the_model_allows_is_flagged():
    found = snippets(ClaudeCodeParams(buffer=5_000))
    assert int(shell_env(found["claude-code-env"])["CLAUDE_CODE_AUTO_COMPACT_WINDOW"]) > 200_000
    assert any("above the model's window (200,000)" in n for n in found["claude-code-env"].notes)


def test_a_window_the_settings_key_does_not_take_is_only_an_environment_variable():
    found = snippets(ClaudeCodeParams(window=60_000))
    assert "claude-code-settings" not in found
    assert shell_env(found["claude-code-env"])["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "60000"
    assert any("100,000 to 1,000,000" in n for n in found["claude-code-env"].notes)


def test_the_summary_size_cannot_be_set_and_the_notes_say_so():
    notes = snippets(ClaudeCodeParams(summary_tokens=5_000))["claude-code-env"].notes
    assert any("summary_tokens (5,000) cannot be set" in n for n in notes)


def test_microcompaction_sets_nothing_and_says_which_choices_claude_code_ignores():
    default = export("claude_code_microcompact", ExportContext(MicrocompactParams(), 1, 1))
    (snippet,) = default
    assert shell_env(snippet) == {}  # only comments: pasting it changes nothing
    assert any("No environment variable or settings.json key" in n for n in snippet.notes)
    tuned = MicrocompactParams(gap_minutes=15, keep_recent=2, compactable_tools=("Read",))
    (changed,) = export("claude_code_microcompact", ExportContext(tuned, 1, 1))
    notes = " ".join(changed.notes)
    assert "gap_minutes (15) cannot be set" in notes
    assert "keep_recent (2) cannot be set" in notes
    assert "compactable_tools cannot be set" in notes
    assert "gap_minutes" not in " ".join(snippet.notes)
