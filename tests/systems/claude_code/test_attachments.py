"""Claude Code attachment records: the text each puts before the model, one line per
case (shapes as Claude Code 2.1 writes them)."""

from __future__ import annotations

import pytest

from contextsim.systems.claude_code.attachments import attachment_text


@pytest.mark.parametrize(
    "attachment, text",
    [
        ({"type": "skill_listing", "content": "- review: review a PR"}, "- review: review a PR"),
        ({"type": "deferred_tools_delta", "addedNames": ["A", "B"]}, "A\nB"),
        ({"type": "agent_listing_delta", "addedLines": ["- Plan: plans"]}, "- Plan: plans"),
        (
            {"type": "queued_command", "prompt": "<task-notification>done"},
            "<task-notification>done",
        ),
        ({"type": "date_change", "newDate": "2026-05-15"}, "2026-05-15"),
        ({"type": "edited_text_file", "filename": "a.txt", "snippet": "1\tdone"}, "1\tdone\na.txt"),
        (
            {"type": "task_reminder", "content": [{"content": "write tests"}], "itemCount": 1},
            "write tests",
        ),
        ({"type": "task_reminder", "content": [], "itemCount": 0}, None),  # nothing to send
        ({"type": "hook_cancelled"}, None),  # a UI event
        ("not an object", None),
    ],
)
def test_the_text_an_attachment_sends(attachment, text):
    expected = "" if text is None else f"<system-reminder>\n{text}\n</system-reminder>"
    assert attachment_text(attachment) == expected
