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
