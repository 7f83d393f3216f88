"""The dashboard's "use it in your agent" panel: the chosen policy as the real system's
configuration, updated with the controls and escaped like all content."""

from __future__ import annotations

import pytest

from contextsim import registry as exports
from contextsim.systems.exporting import ExportContext, Snippet


def fake_export(ctx: ExportContext) -> tuple[Snippet, ...]:
    """An exporter for `mythex` (the seed system, which has no real one), echoing what
    it was given."""
    text = f'{{"keep": {ctx.params.batch}, "window": {ctx.hard_limit}, "budget": {ctx.budget}}}'
    return (Snippet("fake-api", "A fake API's request", "json", text, ("<b>not</b> expressible",)),)


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(exports.EXPORTERS.loaded(), "mythex", fake_export)


def test_the_panel_shows_the_policy_with_the_chosen_parameters(fleet, alice_client, exported):
    run = fleet[0]
    page = alice_client.get(
        f"/runs/{run.public_id}/?policy=mythex&batch=3&budget=50000&hard_limit=90000"
    )
    html = page.content.decode()
    assert 'id="use-in-agent"' in html
    assert "{&quot;keep&quot;: 3, &quot;window&quot;: 90000, &quot;budget&quot;: 50000}" in html
    assert "&lt;b&gt;not&lt;/b&gt; expressible" in html and "<b>not</b>" not in html


def test_an_in_place_change_redraws_the_panel_with_the_new_settings(fleet, alice_client, exported):
    run = fleet[0]
    answer = alice_client.get(
        f"/runs/{run.public_id}/?policy=mythex&batch=5", headers={"HX-Request": "true"}
    )
    assert "&quot;keep&quot;: 5" in answer.content.decode()


def test_a_policy_without_a_real_counterpart_has_no_panel(fleet, alice_client):
    page = alice_client.get(f"/runs/{fleet[0].public_id}/?policy=turns")
    assert 'id="use-in-agent"' not in page.content.decode()
