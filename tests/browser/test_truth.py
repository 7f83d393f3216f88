"""A real compacted Claude Code session in Chromium: the dashboard replays what was sent
(as_logged, the default), marks the logged compaction, and what it draws as sent is
within the target of the measured line; the step after the compaction says so."""

from __future__ import annotations

import statistics

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SESSION = "claude_code/codemie_session-624a4a58.jsonl"


@pytest.fixture
def compacted(page, corpus):  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import User

    from contextsim.ingest.detect import parse_path
    from webapp.models import Visibility
    from webapp.store.actions.saving import do_save_runs

    owner, _ = User.objects.get_or_create(username="local")
    parsed = parse_path(str(corpus / SESSION))
    (main, *_) = do_save_runs(
        parsed, owner=owner, visibility=Visibility.PRIVATE, estimators=("o200k",)
    )
    return main


def test_a_compacted_run_shows_its_compaction_and_sends_what_was_measured(page, compacted):
    page.goto(f"{page.base}/runs/{compacted.public_id}/")
    page.locator("#chart[data-drawn='1']").wait_for()
    drawn = page.evaluate(
        """() => {
          const box = document.getElementById('chart');
          const stacked = box.data.filter(t => t.stackgroup === 'sent');
          const byName = Object.fromEntries(box.data.map(t => [t.name, t]));
          const sent = byName['measured'].x.map((_, i) =>
            stacked.reduce((total, t) => total + (t.y[i] || 0), 0));
          return {
            names: box.data.map(t => t.name),
            legend: [...box.querySelectorAll('.legendtext')].map(e => e.textContent),
            sent, measured: byName['measured'].y,
            compaction: byName['compaction'],
          };
        }"""
    )
    assert "compaction" in drawn["legend"] and "measured" in drawn["legend"]
    assert "unlogged (fitted overhead)" in drawn["names"]
    (step,) = drawn["compaction"]["x"]
    assert "logged" in drawn["compaction"]["text"][0] and "after" in drawn["compaction"]["text"][0]
    errors = [abs(s - m) / m for s, m in zip(drawn["sent"], drawn["measured"], strict=True) if m]
    assert statistics.median(errors) <= 0.05
    assert sorted(errors)[int(0.9 * (len(errors) - 1))] <= 0.15
    # The measured context fell at the compaction: the drawn request fell with it.
    assert drawn["sent"][step] < 0.5 * drawn["sent"][step - 1]
    cards = page.locator("#reconciliation").inner_text()
    assert "unlogged overhead" in cards and "median error" in cards
    page.goto(f"{page.base}/runs/{compacted.public_id}/steps/{step}/")
    assert "The log compacted" in page.locator("#compaction-event").inner_text()
    assert "read" in page.locator("#measured-cache").inner_text()
