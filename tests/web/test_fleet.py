"""A collection's page: its runs simulated under the same controls, with totals."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

SCALED = {"budget": "10000", "hard_limit": "40000", "estimator": "chars4"}


def _page(client: Client, fleet_runs, headers=None, **query: str):
    collection = fleet_runs[0].collection
    return client.get(reverse("collection", args=[collection.public_id]), query, headers=headers)


def test_the_fleet_shows_turns_rejecting_every_subagent_and_mythex_none(alice_client, fleet):
    turns = _page(alice_client, fleet, policy="turns", **SCALED).content.decode()
    assert "0 of 8" in turns and turns.count("no: rejected at step") == 8
    mythex = _page(alice_client, fleet, policy="mythex", **SCALED).content.decode()
    assert "8 of 8" in mythex and "no: rejected at step" not in mythex
    for run in fleet:
        assert (
            f"/runs/{run.public_id}/?policy=mythex&amp;budget=10000&amp;hard_limit=40000" in mythex
        )
    assert 'data-figure="fleet-data"' in mythex and '"fleet-data"' in mythex


def test_a_control_change_redraws_the_fleet_in_place_and_pushes_the_url(alice_client, fleet):
    response = _page(alice_client, fleet, {"HX-Request": "true"}, compare="turns", **SCALED)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert 'id="fleet"' in html and "vs 0" in html and "turns: finished" in html
    figure = json.loads(
        html.split('id="fleet-data" type="application/json">')[1].split("</script>")[0]
    )
    dotted = [t for t in figure["data"] if t.get("line", {}).get("dash") == "dot"]
    assert len(dotted) == len(fleet) and all(t["name"].endswith("(turns)") for t in dotted)
    assert response["HX-Push-Url"].endswith(
        "?budget=10000&hard_limit=40000&estimator=chars4&compare=turns"
    )


def test_bad_settings_are_named(alice_client, fleet):
    response = _page(alice_client, fleet, budget="-3")
    assert response.status_code == 400
    assert "budget: expected between 1 and 100,000,000 tokens, got -3" in response.content.decode()


def test_a_private_collection_is_404_to_others(fleet, bob):
    client = Client()
    client.force_login(bob)
    assert _page(client, fleet).status_code == 404
    assert _page(Client(), fleet).status_code == 404


def _figure(html: str, element: str) -> dict:  # type: ignore[type-arg]
    return json.loads(
        html.split(f'id="{element}" type="application/json">')[1].split("</script>")[0]
    )


def test_the_frontier_puts_each_policy_at_budgets_around_the_chosen_one(alice_client, fleet):
    collection = fleet[0].collection
    url = reverse("collection-frontier", args=[collection.public_id])
    query = {**SCALED, "policy": "mythex", "compare": "turns"}
    answer = alice_client.get(url, query, headers={"HX-Request": "true"})
    assert answer.status_code == 200
    cost = _figure(answer.content.decode(), "frontier-cost")
    lines = {t["name"]: t for t in cost["data"]}
    assert list(lines) == ["mythex", "turns"]
    # 0.25x to 2x of 10,000, at most the 40,000 hard limit.
    budgets = [c[0] for c in lines["mythex"]["customdata"]]
    assert budgets == [2_500, 5_000, 10_000, 15_000, 20_000]
    # Labelled from the first budget to the last; points drawn at one place share one
    # label ("2.5k-5k"), so none prints over another.
    labels = [t for t in lines["mythex"]["text"] if t]
    assert labels[0].startswith("2.5k") and labels[-1].endswith("20k")
    # At 10,000 the seed incident's pattern holds: mythex finishes all 8 subagents and
    # the main run, turns only the main run (the page above says the same).
    mythex = {
        c[0]: x for c, x in zip(lines["mythex"]["customdata"], lines["mythex"]["x"], strict=True)
    }
    turns = {
        c[0]: x for c, x in zip(lines["turns"]["customdata"], lines["turns"]["x"], strict=True)
    }
    page = _page(alice_client, fleet, policy="mythex", **SCALED).content.decode()
    finished = int(page.split("Runs finished</dt><dd")[1].split(">")[1].split(" of")[0])
    assert mythex[10_000] == finished
    assert turns[10_000] < mythex[10_000]


def test_the_frontier_loads_when_scrolled_to_and_has_a_real_link(alice_client, fleet):
    page = _page(alice_client, fleet, policy="mythex", **SCALED).content.decode()
    assert 'hx-trigger="revealed"' in page and "frontier=1#frontier" in page
    inline = _page(alice_client, fleet, policy="mythex", frontier="1", **SCALED).content.decode()
    assert '"frontier-cost"' in inline and 'hx-trigger="revealed"' not in inline
