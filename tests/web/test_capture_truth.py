"""Captured runs in the truth model: their requests are exact (no unlogged overhead),
and a log of the same model that cannot fit a scale on its own takes theirs."""

from __future__ import annotations

import json
import re

from contextsim.ingest.base import ParsedFile
from contextsim.model import Message, Run, TextPart, Usage
from webapp.ingest.proxy.services import Capture, record
from webapp.models import Run as StoredRun
from webapp.models import Visibility
from webapp.store.actions.saving import do_save_runs

SYSTEM = "You are a careful agent. " * 40


def _capture(owner, turns: int) -> StoredRun:  # type: ignore[no-untyped-def]
    """A conversation of `turns` calls whose measured input is exactly 1.25 x the
    request's JSON size / 4: a provider whose tokenizer is a fixed ratio of the
    body's, with nothing unlogged."""
    history: list[dict[str, str]] = []
    for turn in range(turns):
        history.append(
            {"role": "user", "content": f"Question {turn}: " + "tell me more " * (20 * turn + 5)}
        )
        body = {
            "model": "claude-sonnet-4-5",
            "system": SYSTEM,
            "messages": history,
            "max_tokens": 9,
        }
        answer = "Here is what I found. " * (turn + 3)
        measured = round(len(json.dumps(body)) / 4 * 1.25)
        reply = {"content": [{"type": "text", "text": answer}], "usage": {"input_tokens": measured}}
        record(
            owner,
            Capture(
                "anthropic", "messages", body, reply, 200, 100.0 + turn, 100.5 + turn, 101.0 + turn
            ),
        )
        history.append({"role": "assistant", "content": answer})
    return StoredRun.objects.get(format="capture")


def _card(client, run: StoredRun) -> str:  # type: ignore[no-untyped-def]
    page = client.get(f"/runs/{run.public_id}/?estimator=chars4").content.decode()
    found = re.search(r'<div id="reconciliation".*?</div>', page, re.S)
    assert found is not None
    return re.sub(r"<[^>]+>", " ", found.group(0))


def test_a_captured_runs_requests_are_exact_no_overhead_is_fitted(alice, alice_client):
    run = _capture(alice, 6)
    card = _card(alice_client, run)
    assert "captured whole, nothing unlogged" in card
    assert "unlogged overhead 0" in card
    assert "fitted on 6 measured requests" in card


def test_a_log_that_cannot_tell_its_scale_takes_the_captured_runs(alice, alice_client):
    _capture(alice, 6)
    captured = _card(alice_client, StoredRun.objects.get(format="capture"))
    scale = re.search(r"\u00d7(\d+\.\d+)", captured).group(1)  # type: ignore[union-attr]
    log = Run(
        "a session log",
        (
            Message("user", (TextPart("hello " * 300),)),
            Message("assistant", (TextPart("hi"),), Usage(30_000)),
            Message("user", (TextPart("more " * 300),)),
            Message("assistant", (TextPart("ok"),), Usage(30_500)),
        ),
        format="claude_code",
        model="claude-sonnet-4-5",
    )
    (stored,) = do_save_runs(
        ParsedFile("claude_code", (log,)), owner=alice, visibility=Visibility.PRIVATE
    )
    card = _card(alice_client, stored)
    assert "scale of the captured run" in card
    assert f"\u00d7{scale}" in card
    other_model = StoredRun.objects.filter(pk=stored.pk)
    other_model.update(model="gpt-5")
    assert "captured run" not in _card(alice_client, StoredRun.objects.get(pk=stored.pk))


def test_the_step_inspector_shows_the_captured_calls_parameters_status_and_timing(
    alice, alice_client
):
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 77,
        "temperature": 0.3,
        "metadata": {"user_id": "<script>alert(1)</script>"},
        "messages": [{"role": "user", "content": "hi"}],
    }
    reply = {"content": [{"type": "text", "text": "hello"}], "usage": {"input_tokens": 12}}
    record(
        alice,
        Capture(
            "anthropic",
            "messages",
            body,
            reply,
            200,
            10.0,
            10.25,
            11.5,
            streamed=True,
            params={k: v for k, v in body.items() if k != "messages"},
        ),
    )
    run = StoredRun.objects.get()
    page = alice_client.get(f"/runs/{run.public_id}/steps/0/").content.decode()
    section = page[page.index('id="captured"') :]
    assert "HTTP 200" in section and "streamed" in section
    assert "first byte after 250 ms" in section and "1500 ms in all" in section
    assert "&quot;max_tokens&quot;: 77" in section and "&quot;temperature&quot;: 0.3" in section
    assert (
        "<script>alert(1)</script>" not in page
        and "&lt;script&gt;alert(1)&lt;/script&gt;" in section
    )


def test_a_failed_call_shows_the_providers_error_on_its_pending_request(alice, alice_client):
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x" * 50}]}
    error = 'upstream answered 400: {"type":"error","error":{"message":"prompt is too long"}}'
    record(alice, Capture("anthropic", "messages", body, None, 400, 10.0, 10.1, 10.1, error=error))
    run = StoredRun.objects.get()
    page = alice_client.get(f"/runs/{run.public_id}/steps/0/").content.decode()
    assert "HTTP 400" in page and "prompt is too long" in page
