"""The dashboard's answers as HTML, JSON and CSV: compactions with what set them off,
problems with what they cost (the export and the page agree), the trace sorted by any
column, a wrong parameter shown on its control, the copy link that works for whoever
gets it, the sweep form starting from the run's own mechanisms, subagents drawn from
the step that started them, and frontier labels that do not print over each other."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from contextsim.analysis.sweep import Config, Totals
from tests.conftest import corpus_files
from tests.web.test_dashboard import get, native_run
from tests.web.test_import_service import import_bytes
from webapp.dashboard.state import slider_step
from webapp.models import Run, ShareLink
from webapp.sweeps.frontier import frontier_figures

pytestmark = pytest.mark.django_db

CODEMIE = corpus_files("claude_code", "codemie_session-624a*.jsonl")


def _pre_tokens(path) -> int:
    for line in path.open("rb"):
        if b"compact_boundary" in line:
            return int(json.loads(line)["compactMetadata"]["preTokens"])
    raise AssertionError("no compaction in the log")


@pytest.mark.parametrize("path", CODEMIE)
def test_a_logged_compaction_says_why_on_the_dashboard_and_in_the_export(alice, alice_client, path):
    import_bytes(alice, path.name, path.read_bytes())
    run = Run.objects.get(subagent=False, compaction_request=False)
    page = get(alice_client, "run", run, policy="as_logged").content.decode()
    section = page.split('id="compactions"', 1)[1].split("</section>", 1)[0]
    pre = _pre_tokens(path)
    assert f"{pre:,}" in section and ">auto<" in section and "Threshold" in section
    assert "200,000" in section  # Claude Code's window for its model
    exported = json.loads(get(alice_client, "export", run, "json", policy="as_logged").content)
    compacted = [p for p in exported["problems"] if p["kind"] == "compacted"]
    assert len(compacted) == 1 and f"{pre:,}" in compacted[0]["detail"]
    # Problems carry what they cost, the costliest first, and the page says the same.
    costs = [p["cost_usd"] for p in exported["problems"]]
    assert costs == sorted(costs, reverse=True) and costs[0] > 0
    callout = page.split('id="costliest"', 1)[1].split("</p>", 1)[0]
    assert f"${costs[0]:.2f}" in callout
    assert f"steps/{exported['problems'][0]['step']}/" in callout


def test_the_trace_sorts_by_cost_and_keeps_the_order_on_its_pages(alice, alice_client):
    import_bytes(alice, "dash.json", native_run(rounds=80, size=800))
    run = Run.objects.get(title="dash")
    page = get(alice_client, "run", run, sort="cost", dir="desc", estimator="chars4")
    html = page.content.decode()
    table = html.split('id="trace-table"', 1)[1]
    cells = re.findall(r'<td class="num">\$([\d.]+)</td>\s*</tr>', table)
    values = [float(c) for c in cells]
    assert len(values) == 50 and values == sorted(values, reverse=True)
    assert 'aria-sort="descending"' in table and "sort=cost&amp;dir=desc&page=2" in table
    second = get(alice_client, "run", run, sort="cost", dir="desc", page="2", estimator="chars4")
    more = [
        float(c)
        for c in re.findall(
            r'<td class="num">\$([\d.]+)</td>\s*</tr>',
            second.content.decode().split('id="trace-table"', 1)[1],
        )
    ]
    assert more and max(more) <= min(values)


def test_one_wrong_parameter_is_shown_on_its_control_and_the_rest_is_drawn(alice, alice_client):
    import_bytes(alice, "dash.json", native_run())
    run = Run.objects.get(title="dash")
    response = get(alice_client, "run", run, policy="mythex", keep_fraction="7", budget=8_000)
    html = response.content.decode()
    assert response.status_code == 400
    assert 'id="chart"' in html and 'id="figure-data"' in html  # the dashboard is drawn
    control = html.split('name="keep_fraction"', 1)[1].split("</label>", 1)[0]
    assert 'aria-invalid="true"' in control and "keep_fraction must be in (0, 1]" in control
    assert 'value="7"' in html.split('id="policy-params"', 1)[1].split("</fieldset>", 1)[0]
    assert "Shown with its default instead" in html
    # Numbers are number fields; a parameter that may be none is empty, not "none".
    fields = html.split('id="policy-params"', 1)[1].split("</fieldset>", 1)[0]
    assert 'type="number" name="batch"' in fields
    assert 'value="none"' not in fields


@pytest.mark.parametrize(("top", "step"), [(8_000, 100), (200_000, 1_000), (1_000_000, 5_000)])
def test_the_budget_slider_moves_about_a_two_hundredth_of_its_range(top, step):
    assert slider_step(top) == step


def test_copy_link_copies_a_link_its_reader_can_open(alice, alice_client, client):
    import_bytes(alice, "dash.json", native_run())
    run = Run.objects.get(title="dash")
    step = reverse("step", args=[run.public_id, 3])
    private = get(alice_client, "step", run, 3).content.decode()
    assert "copy link (only you)" in private
    link = ShareLink.objects.create(run=run, created_by=alice)
    shared = get(alice_client, "step", run, 3).content.decode()
    copied = re.search(r'data-copy="([^"]+)"[^>]*>copy share link', shared).group(1)
    copied = copied.replace("&amp;", "&")
    assert copied.startswith(f"/s/{link.token}/?next=")
    # Someone else, signed out, opens what was copied and lands on that step.
    opened = client.get(copied, follow=True)
    assert opened.status_code == 200 and opened.redirect_chain[-1][0].startswith(step)


def test_the_sweep_form_starts_from_the_runs_own_mechanisms_and_window(alice, alice_client):
    session = {
        "type": "user",
        "sessionId": "s-9",
        "uuid": "u1",
        "message": {"role": "user", "content": "hello"},
    }
    answer = {
        "type": "assistant",
        "sessionId": "s-9",
        "uuid": "a1",
        "message": {
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "hi"}],
            "usage": {"input_tokens": 10, "output_tokens": 2},
        },
    }
    data = (json.dumps(session) + "\n" + json.dumps(answer) + "\n").encode()
    import_bytes(alice, "s.jsonl", data)
    run = Run.objects.get()
    html = alice_client.get(reverse("sweep-new"), {"run": run.public_id}).content.decode()
    checked = set(re.findall(r'name="policies" value="([^"]+)"[^>]*checked', html))
    assert checked == {"as_logged", "claude_code_auto_compact", "claude_code_microcompact"}
    assert 'name="hard_limit" value="200000"' in html
    assert "100000 130000 160000 200000" in html


def test_a_compaction_request_is_not_offered_as_a_fit_to_borrow(alice):
    from webapp.runs.reads import lenders

    import_bytes(alice, "dash.json", native_run())
    run = Run.objects.get(title="dash")
    Run.objects.filter(pk=run.pk).update(model="m-1")
    other = Run.objects.create(
        owner=alice, title="summary", model="m-1", requests_with_usage=1, compaction_request=True
    )
    good = Run.objects.create(owner=alice, title="agent", model="m-1", requests_with_usage=5)
    run.refresh_from_db()
    assert lenders(alice, run) == [good] and other not in lenders(alice, run)


@pytest.mark.skipif(
    len(corpus_files("claude_code", "pai_b7a09704*.jsonl")) < 2,
    reason="the pai session and its subagent are not here",
)
def test_a_subagent_is_drawn_from_the_step_that_started_it(alice, alice_client):
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for path in corpus_files("claude_code", "pai_b7a09704*.jsonl"):
            archive.writestr(path.name, path.read_bytes())
    import_bytes(alice, "pai.zip", out.getvalue())
    agent = Run.objects.get(subagent=True)
    started = alice_client.get(reverse("run", args=[agent.public_id])).content.decode()
    step = int(re.search(r"Started by <a [^>]*>step (\d+) of", started).group(1))
    assert step > 0
    page = alice_client.get(reverse("collection", args=[agent.collection.public_id]))
    figure = json.loads(
        page.content.decode()
        .split('id="fleet-data" type="application/json">')[1]
        .split("</script>")[0]
    )
    (line,) = [t for t in figure["data"] if t["name"].startswith("Explore")]
    assert line["x"][0] == step and line["customdata"][0] == 0


def test_frontier_labels_of_points_drawn_at_one_place_are_one_label():
    configs = [Config("p", b) for b in (100_000, 200_000, 400_000, 800_000)]

    def totals(completed: int, cost: float) -> Totals:
        return Totals(
            runs=4,
            completed_runs=completed,
            over_budget_runs=0,
            rejected_steps=0,
            peak_sent=0,
            total_sent=0,
            cached_tokens=0,
            cost=cost,
        )

    found = [totals(2, 1.0), totals(4, 2.0), totals(4, 2.01), totals(4, 2.02)]
    figure = frontier_figures(configs, found, 4)["cost"]
    assert figure["data"][0]["text"] == ["100k", "", "", "200k-800k"]


def test_the_copy_of_a_share_is_not_offered_to_other_readers(alice, client):
    import_bytes(alice, "dash.json", native_run())
    run = Run.objects.get(title="dash")
    Run.objects.filter(pk=run.pk).update(visibility="public")
    page = get(client, "step", run, 3).content.decode()
    assert ">copy link<" in page and "copy share link" not in page
    assert User.objects.count() == 1


CAPTURES = corpus_files("raw_api", "hanq_redacted_log-2026-06-15-09-15-50.jsonl")


@pytest.mark.parametrize("path", CAPTURES)
def test_a_captures_tool_definitions_are_shared_out_by_tool(alice, alice_client, path):
    defined: set[str] = set()
    for line in path.open("rb"):
        body = json.loads(line).get("request", {}).get("body")
        if isinstance(body, dict):
            defined |= {t["name"] for t in body.get("tools") or [] if t.get("name")}
    import_bytes(alice, path.name, path.read_bytes())
    shown: set[str] = set()
    for run in Run.objects.filter(format="capture"):
        page = get(alice_client, "run", run, policy="as_logged").content.decode()
        if 'id="tool-table"' not in page:
            continue
        table = page.split('id="tool-table"', 1)[1].split("</table>", 1)[0]
        rows = re.findall(r"<tr><td><code>([^<]+)</code></td>(.*?)</tr>", table)
        shown |= {name for name, cells in rows if "not logged" not in cells}
        assert "(tool definitions)" not in {name for name, _ in rows}
    # Every tool the requests defined, each with its definition's share.
    assert defined and shown == defined


TPUINF = corpus_files("claude_code", "tpuinf_19a2e244.jsonl")


@pytest.mark.parametrize("path", TPUINF)
def test_what_claude_code_attached_is_a_layer_of_its_own(alice, alice_client, path):
    from contextsim.systems.claude_code.attachments import attachment_text
    from tests.conftest import log_entries
    from webapp.models import Message

    attached = [
        e
        for e in log_entries(path)
        if e.get("type") == "attachment" and attachment_text(e.get("attachment"))
    ]
    assert attached  # the session's harness added context of its own
    import_bytes(alice, path.name, path.read_bytes())
    stored = Message.objects.filter(kind="attachment")
    assert stored.count() == len(attached)
    run = stored.first().run
    page = get(alice_client, "run", run, policy="as_logged").content.decode()
    figure = json.loads(
        page.split('id="figure-data" type="application/json">')[1].split("</script>")[0]
    )
    assert "kept: attachment" in {t["name"] for t in figure["data"]}
    # The step after the first attachment shows it in its bar and its table.
    first = stored.order_by("index").first().index
    exported = json.loads(get(alice_client, "export", run, "json", policy="as_logged").content)
    step = next(s["step"] for s in exported["steps"] if s["history_messages"] > first)
    html = get(alice_client, "step", run, step, policy="as_logged").content.decode()
    assert "k-attachment" in html
