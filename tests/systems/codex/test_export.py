"""The Codex CLI export: config.toml parses (tomllib) to the window and the compaction
limit the simulation used, and says what Codex cannot be told."""

from __future__ import annotations

import tomllib

from contextsim.registry import ExportContext, export
from contextsim.systems.codex.policies import CodexParams


def exported(params: CodexParams, hard_limit: int = 400_000) -> tuple[dict[str, object], str]:
    (snippet,) = export("codex_auto_compact", ExportContext(params, 300_000, hard_limit, "gpt-5"))
    assert snippet.language == "toml" and snippet.target == "codex"
    return tomllib.loads(snippet.text), " ".join(snippet.notes)


def test_the_chosen_window_and_limit_round_trip_through_config_toml():
    config, _ = exported(CodexParams(window=272_000, compact_limit=200_000))
    assert config == {"model_context_window": 272_000, "model_auto_compact_token_limit": 200_000}


def test_without_a_limit_it_is_90_percent_of_the_window_as_in_codex():
    config, _ = exported(CodexParams(window=272_000))
    assert config["model_auto_compact_token_limit"] == 244_800


def test_without_a_window_the_one_the_hard_limit_is_95_percent_of_is_written():
    # Rollouts state gpt-5's usable window, 258,400: 95% of its 272,000.
    config, notes = exported(CodexParams(), hard_limit=258_400)
    assert config == {"model_context_window": 272_000, "model_auto_compact_token_limit": 244_800}
    assert "hard limit (258,400)" in notes


def test_what_codex_cannot_be_told_is_in_the_notes():
    _, notes = exported(CodexParams(window=272_000, user_message_tokens=5_000, summary_tokens=900))
    assert "user_message_tokens (5,000) cannot be set" in notes
    assert "summary_tokens (900) cannot be set" in notes
    _, default_notes = exported(CodexParams(window=272_000))
    assert "user_message_tokens" not in default_notes
