"""The estimator pages: a run's comparison by script and per request, and the playground."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from contextsim.counting.estimators import ESTIMATORS
from tests.web.test_import_service import import_bytes
from webapp import tasks
from webapp.models import EstimatorReport, Run

pytestmark = pytest.mark.django_db

RUSSIAN = "Съешь же ещё этих мягких французских булок, да выпей чаю. " * 400


@pytest.fixture
def run(alice) -> Run:
    messages = [{"role": "user", "content": "read"}]
    for i in range(4):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_call", "id": f"c{i}", "name": "read", "arguments": {}}],
                "usage": {"input_tokens": 12_000 * (i + 1)},
            }
        )
        messages.append(
            {
                "role": "tool",
                "content": [{"type": "tool_result", "call_id": f"c{i}", "text": RUSSIAN}],
            }
        )
    doc = {"contextsim": 1, "runs": [{"title": "ru", "messages": messages}]}
    import_bytes(alice, "ru.json", json.dumps(doc).encode())
    return Run.objects.get(title="ru")


def test_run_page_compares_every_estimator_by_script(alice_client, run):
    response = alice_client.get(reverse("run-estimators", args=[run.public_id]))
    page = response.content.decode()
    assert response.status_code == 200
    assert "Cyrillic" in page
    for name in ESTIMATORS:
        assert f">{name}</th>" in page
    # Computed for the view, which stores nothing; the task it queued stores it.
    assert not EstimatorReport.objects.filter(run=run).exists()
    tasks.store_report(run.pk, "o200k")
    (stored,) = EstimatorReport.objects.filter(run=run, reference="o200k")
    assert stored.revision == run.revision and stored.data["total"]["chars"] > 0
    again = alice_client.get(reverse("run-estimators", args=[run.public_id]))
    assert again.status_code == 200 and "Cyrillic" in again.content.decode()


def test_requests_said_to_fit_but_measured_over_are_listed(alice_client, run):
    page = alice_client.get(
        reverse("run-estimators", args=[run.public_id]), {"budget": 20_000}
    ).content.decode()
    listed = page.split("did not")[1]
    assert "chars4" in listed and f"/runs/{run.public_id}/steps/" in listed


def test_bad_reference_or_budget_is_explained(alice_client, run):
    url = reverse("run-estimators", args=[run.public_id])
    bad = alice_client.get(url, {"reference": "gpt2"})
    assert bad.status_code == 400 and "reference: unknown" in bad.content.decode()
    assert alice_client.get(url, {"budget": "-1"}).status_code == 400


def test_playground_counts_pasted_text_and_highlights_scripts(db):
    client = Client()
    response = client.post(
        reverse("playground"), {"text": "Hello мир 世界 <b>x</b>", "reference": "cl100k"}
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert 'class="s-cyrillic"' in page and 'class="s-han"' in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page


def test_playground_rejects_non_utf8_uploads(db):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = Client().post(
        reverse("playground"), {"file": SimpleUploadedFile("x.txt", b"caf\xe9")}
    )
    assert response.status_code == 400 and "not valid UTF-8" in response.content.decode()


def test_private_run_estimators_are_404_for_others(bob, run):
    client = Client()
    client.force_login(bob)
    assert client.get(reverse("run-estimators", args=[run.public_id])).status_code == 404


def test_playground_counts_a_pasted_line_break_as_one_character(db):
    """Browsers send a textarea's line breaks as CRLF; what was pasted had one character
    per line break."""
    lines = "\r\n".join(["one line of text"] * 50)
    page = Client().post(reverse("playground"), {"text": lines}).content.decode()
    pasted = len(lines.replace("\r\n", "\n"))
    assert f'<td class="num">{pasted:,}</td>' in page
    assert f'<td class="num">{len(lines):,}</td>' not in page


def test_scripts_with_too_few_tokens_are_marked_and_muted_not_barred(db):
    text = "An English paragraph that is long enough to count. " * 40 + " мир"
    page = Client().post(reverse("playground"), {"text": text}).content.decode()
    row = page.split('s-cyrillic">')[1].split("</tr>")[0]
    assert "few tokens" in row and 'class="err muted"' in row and 'class="bar' not in row
    latin = page.split('s-ascii_alnum">')[1].split("</tr>")[0]
    assert "few tokens" not in latin and 'class="bar' in latin


def test_the_playground_counts_less_for_a_visitor_not_signed_in(db, settings, alice):
    settings.MAX_PLAYGROUND_CHARS = 1_000
    anonymous = Client().post(reverse("playground"), {"text": "x" * 200}).content.decode()
    assert "over 100 characters (sign in to count more)" in anonymous
    member = Client()
    member.force_login(alice)
    page = member.post(reverse("playground"), {"text": "x" * 200}).content.decode()
    assert "over 100 characters" not in page and '<td class="num">200</td>' in page


def test_an_upload_over_the_limit_is_refused_before_its_body_is_read(db, settings, alice):
    settings.MAX_UPLOAD_BYTES = 1_000
    client = Client()
    client.force_login(alice)
    response = client.generic(
        "POST",
        reverse("upload"),
        b"x",
        CONTENT_TYPE="multipart/form-data; boundary=b",
        CONTENT_LENGTH=str(50 * 1024 * 1024),
    )
    assert response.status_code == 413 and "the limit is 1,000" in response.content.decode()


def test_a_compacted_sessions_requests_are_counted_as_sent_not_as_their_whole_history(
    alice, corpus
):
    from tests.web.test_import_service import import_bytes
    from webapp.estimators.reads import request_rows

    path = corpus / "claude_code" / "codemie_session-624a4a58.jsonl"
    import_bytes(alice, "s.jsonl", path.read_bytes())
    run = Run.objects.get(format="claude-code", subagent=False, compaction_request=False)
    (boundary,) = [c["before_message"] for c in run.compactions]
    rows = request_rows(run)
    after = next(
        r
        for r in rows
        if r.measured
        and r.step > 0
        and rows[r.step - 1].measured
        and r.measured < 0.6 * rows[r.step - 1].measured
    )
    # The log measured the request after the compaction at a fraction of the one
    # before: the estimate of what it sent falls with it (the whole history did not).
    before = rows[after.step - 1]
    assert after.estimates["o200k"] < 0.6 * before.estimates["o200k"]
    assert after.history < boundary
