"""The OpenAI Agents SDK's tool-output trimmer, rule by rule on a small hand-made run."""

from __future__ import annotations

from contextsim.model import Message, TextPart
from tests.engine.hand_made import (
    call,
    result,
    results_letters,
    rounds,
    sim,
    task,
    user,
)


def test_the_trimmer_previews_long_output_older_than_the_recent_user_turns():
    turn = [*rounds(2, chars=4_000), Message("assistant", (TextPart("ok"),))]
    short = [call("s1"), result("s1", chars=300), Message("assistant", (TextPart("ok"),))]
    run = task(*turn, user("next"), *short, user("more"), *rounds(1), user("last"))
    s = sim("openai_tool_output_trimmer", run)
    final = len(s.records) - 1
    # Two recent user turns ("more", "last") are left alone; before them the long
    # results are trimmed, the 300-character one is not (at most 500 characters).
    assert results_letters(s, final) == "cckk"
    # A trimmed result costs its header and a 200-character preview (about 50 tokens).
    trimmed = [t for t, c in zip(s.statics.cleared_tokens, s.statics.clearable, strict=True) if c]
    assert len(trimmed) == 3 and all(60 < t < 110 for t in trimmed)
    only_grep = sim("openai_tool_output_trimmer", run, trimmable_tools=("grep",))
    assert "c" not in results_letters(only_grep, final)
