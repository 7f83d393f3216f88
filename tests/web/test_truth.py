"""The dashboard's truth: the fit card, reconciliation switched off or set by hand in
the URL, a run without usage borrowing the fit of a run of the same model, defaults
from the run's model, and the measured cost."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from contextsim.ingest.base import ParsedFile
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart, Usage
from webapp.models import Run as StoredRun
from webapp.models import Visibility
from webapp.store.actions.saving import do_save_runs

pytestmark = pytest.mark.django_db

MODEL = "claude-sonnet-4-5-20250929"
UNLOGGED = 20_000


def _run(title: str, measured: bool, model: str = MODEL) -> Run:
    """Ten rounds of 4,000-character results; measured usage (when given) as chars/4 of
    the history plus UNLOGGED tokens the log does not hold."""
    messages = [Message("user", (TextPart("read the files"),))]
    chars = len("read the files")
    for i in range(10):
        usage = Usage(chars // 4 + UNLOGGED, output_tokens=20) if measured else None
        messages.append(Message("assistant", (ToolCallPart(f"c{i}", "read", "{}"),), usage))
        messages.append(Message("tool", (ToolResultPart(f"c{i}", f"{i} " + "x" * 4_000),)))
        chars += len("read{}") + 4_002
    messages.append(Message("assistant", (TextPart("done"),)))
    return Run(title, tuple(messages), format="native", model=model)


def _save(owner, *runs: Run) -> list[StoredRun]:
    parsed = ParsedFile("native", runs)
    return list(
        do_save_runs(parsed, owner=owner, visibility=Visibility.PRIVATE, estimators=("chars4",))
    )


def _page(client, run: StoredRun, **query) -> str:
    response = client.get(reverse("run", args=[run.public_id]), {"estimator": "chars4", **query})
    return response.content.decode()


def _figure(html: str) -> dict:
    found = re.search(
        r'<script id="figure-data" type="application/json">(.*?)</script>', html, re.S
    )
    assert found
    return json.loads(found.group(1))


def test_the_fit_card_names_the_unlogged_overhead_and_the_sent_line_meets_the_measured(
    alice_client, alice
):
    (run,) = _save(alice, _run("measured", True))
    html = _page(alice_client, run)
    assert "unlogged overhead" in html and "fitted on 10 measured requests" in html
    figure = _figure(html)
    names = [t["name"] for t in figure["data"]]
    assert "unlogged (fitted overhead)" in names and "measured" in names
    stacked = [t for t in figure["data"] if t.get("stackgroup") == "sent"]
    measured = next(t for t in figure["data"] if t["name"] == "measured")
    for i, m in enumerate(measured["y"]):
        if m:
            sent = sum(t["y"][i] for t in stacked)
            assert abs(sent - m) <= 0.02 * m
    # The run's model decides the defaults: its window is the hard limit.
    assert 'name="hard_limit" min="1" step="1" value="200000"' in html
    assert "Measured cost" in html and "genai-prices" in html


def test_reconciliation_switched_off_or_set_by_hand_is_in_the_url(alice_client, alice):
    (run,) = _save(alice, _run("measured", True))
    off = _page(alice_client, run, reconcile="off")
    assert "off: the estimator" in off
    assert "unlogged (fitted overhead)" not in off
    by_hand = _page(alice_client, run, overhead="5000", scale="1")
    assert "unlogged overhead 5,000" in by_hand and "set by hand" in by_hand
    bad = alice_client.get(reverse("run", args=[run.public_id]), {"scale": "x"})
    assert bad.status_code == 400 and "scale: expected a ratio" in bad.content.decode()


def test_a_run_without_usage_borrows_the_fit_of_a_run_of_the_same_model(alice_client, alice):
    lender, plain = _save(alice, _run("measured", True), _run("unmeasured", False))
    own = _page(alice_client, plain)
    assert "no measured usage: the estimator" in own
    assert f'value="{lender.public_id}"' in own  # offered as a lender
    borrowed = _page(alice_client, plain, borrow=lender.public_id)
    assert "borrowed from measured" in borrowed
    assert "unlogged (fitted overhead)" in [t["name"] for t in _figure(borrowed)["data"]]
    missing = alice_client.get(reverse("run", args=[plain.public_id]), {"borrow": "nope"})
    assert missing.status_code == 400 and "borrow: no run" in missing.content.decode()


def test_a_model_genai_prices_does_not_know_is_said_with_the_defaults_used(alice_client, alice):
    (run,) = _save(alice, _run("mystery", True, model="my-own-model-7"))
    html = _page(alice_client, run)
    assert "my-own-model-7” is not in genai-prices" in html
    assert "hard limit defaults to 1,000,000" in html


def test_a_what_if_is_compared_with_what_was_sent(alice_client, alice):
    (run,) = _save(alice, _run("measured", True))
    html = _page(alice_client, run, policy="mythex", budget="20000")
    assert "A what-if, compared with what was sent" in html
    assert 'id="baseline"' not in _page(alice_client, run)  # as_logged is the baseline


def test_a_sessions_compaction_request_is_one_more_point_of_its_fit(alice_client, alice):
    from contextsim.model import Compaction

    session = _run("session", True)
    summary = Message("user", (TextPart("Summary: read ten files"),), compact_summary=True)
    after = _run("after", True).messages[1:]
    compacted = Run(
        "session",
        (*session.messages, summary, *after),
        format="native",
        model=MODEL,
        session_id="s-1",
        compactions=(Compaction(len(session.messages), 31_000, "auto"),),
    )
    prompt = Message("user", (TextPart("Summarize this conversation"),))
    wrote = Message("assistant", (TextPart("Summary"),), Usage(31_000, output_tokens=900))
    request = Run(
        "compaction request of s-1",
        (prompt, wrote),
        format="native",
        model=MODEL,
        session_id="agent-acompact-1",
        parent_session_id="s-1",
        subagent=True,
        compaction_request=True,
    )
    stored, _ = _save(alice, compacted, request)
    html = _page(alice_client, stored)
    assert "fitted on 21 measured requests (1 of them the compaction request)" in html


def test_the_inspector_shows_an_observation_the_agent_sent_shortened(alice_client, alice):
    from tests.ingest.test_sent_requests import EXAMPLES, OLD, _trajectory

    parsed = EXAMPLES.parse(_trajectory())
    (stored,) = do_save_runs(parsed, owner=alice, visibility=Visibility.PRIVATE)
    url = reverse("step", args=[stored.public_id, 2])
    html = alice_client.get(url, {"estimator": "chars4"}).content.decode()
    assert OLD in html and "the message in full" in html
    whatif = alice_client.get(url, {"estimator": "chars4", "policy": "none"}).content.decode()
    assert OLD not in whatif


def test_a_peak_above_the_models_window_is_flagged_where_it_is_listed(alice_client, alice):
    over = Message("assistant", (TextPart("done"),), Usage(250_000, output_tokens=10))
    big = Run("big", (Message("user", (TextPart("go"),)), over), format="native", model=MODEL)
    fits = _run("fits", True)
    stored_big, stored_fits = _save(alice, big, fits)
    listing = alice_client.get(reverse("runs")).content.decode()
    assert listing.count("above the 200,000 window") == 1
    requests = reverse("run-requests", args=[stored_big.public_id])
    assert "above the 200,000 window" in alice_client.get(requests).content.decode()
    requests = reverse("run-requests", args=[stored_fits.public_id])
    assert "above the" not in alice_client.get(requests).content.decode()


def test_the_ledger_says_which_policy_budget_and_estimator_it_shows(alice_client, alice):
    (run,) = _save(alice, _run("measured", True))
    url = reverse("ledger", args=[run.public_id])
    query = {"policy": "mythex", "budget": "9000", "batch": "2", "estimator": "chars4"}
    html = alice_client.get(url, query).content.decode()
    line = html.split('id="ledger-config">')[1].split("</p>")[0]
    assert "<b>mythex</b> (batch 2)" in line and "budget 9,000" in line
    assert "hard limit 200,000" in line and "chars4 tokens" in line
