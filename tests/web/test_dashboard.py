"""The run dashboard, its partials, the step inspector, the ledger and exports."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client
from django.urls import reverse

from tests.web.test_import_service import import_bytes
from webapp.models import Run

pytestmark = pytest.mark.django_db


def native_run(rounds: int = 30, size: int = 4_000) -> bytes:
    messages = [{"role": "system", "content": "be careful"}, {"role": "user", "content": "go"}]
    for i in range(rounds):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_call",
                        "id": f"c{i}",
                        "name": "read_file",
                        "arguments": {"path": f"f{i}"},
                    }
                ],
                "usage": {"input_tokens": 1_000 * (i + 1)},
            }
        )
        text = "<b>tag</b> " + "x" * size if i == 3 else f"{i} " + "y" * size
        messages.append(
            {"role": "tool", "content": [{"type": "tool_result", "call_id": f"c{i}", "text": text}]}
        )
    messages.append({"role": "assistant", "content": "done"})
    return json.dumps({"contextsim": 1, "runs": [{"title": "dash", "messages": messages}]}).encode()


@pytest.fixture
def run(alice) -> Run:
    import_bytes(alice, "dash.json", native_run())
    return Run.objects.get(title="dash")


def get(client: Client, name: str, run: Run, *args, htmx: bool = False, **query):
    """The page, under mythex unless the query names a policy (as_logged, the default,
    sends everything: these tests are about a policy that clears and cuts)."""
    query.setdefault("policy", "mythex")
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.get(reverse(name, args=[run.public_id, *args]), query, **headers)


def test_dashboard_shows_chart_summary_problems_and_trace(alice_client, run):
    response = get(alice_client, "run", run, budget=8_000, estimator="chars4")
    page = response.content.decode()
    assert response.status_code == 200
    figure = json.loads(
        page.split('id="figure-data" type="application/json">')[1].split("</script>")[0]
    )
    names = {t["name"] for t in figure["data"]}
    assert {
        "kept: tool result",
        "cleared (notes)",
        "full history (none)",
        "measured",
        "problems",
    } <= names
    assert [s["y0"] for s in figure["layout"]["shapes"]] == [8_000, 1_000_000]
    assert "Rejected requests" in page and "Cached share" in page
    assert 'class="problem-list"' in page
    assert page.count("<tr class=") + page.count("<tr>") >= 31


def test_control_change_returns_only_the_analysis_and_pushes_the_canonical_url(alice_client, run):
    response = get(
        alice_client,
        "run",
        run,
        htmx=True,
        policy="mythex",
        budget=8000,
        hard_limit=1000000,
        estimator="o200k",
        batch=4,
        keep_fraction="0.25",
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="analysis">')
    assert 'id="policy-params" class="params" hx-swap-oob="true"' in page
    assert "<html" not in page
    assert (
        response["HX-Push-Url"]
        == reverse("run", args=[run.public_id]) + "?policy=mythex&budget=8000"
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"budget": "-5"}, "budget: expected between 1 and"),
        ({"budget": "lots"}, "budget: expected a whole number of tokens, got &#x27;lots&#x27;"),
        ({"policy": "magic"}, "policy: unknown &#x27;magic&#x27;"),
        ({"estimator": "bytes"}, "estimator: unknown &#x27;bytes&#x27;"),
        ({"batch": "many"}, "batch: expected int, got &#x27;many&#x27;"),
        ({"nonsense_param": "1", "keep_fraction": "-1"}, "keep_fraction: expected a value &gt;= 0"),
        ({"compare": "nope"}, "compare: unknown"),
    ],
)
def test_bad_parameters_get_a_clear_message_not_a_500(alice_client, run, query, message):
    for name, args in (("run", ()), ("step", (1,)), ("ledger", ())):
        response = get(alice_client, name, run, *args, **query)
        assert response.status_code == 400, name
        assert message in response.content.decode(), name


def test_budget_above_the_hard_limit_is_allowed_but_explained(alice_client, run):
    page = get(alice_client, "run", run, budget=2_000_000).content.decode()
    assert "is above the hard limit" in page


def test_compare_shows_both_policies(alice_client, run):
    page = get(alice_client, "run", run, budget=8000, compare="none").content.decode()
    assert "sent by none" in page and "mythex vs none" in page and " vs " in page


def test_problem_filter_and_trace_pages(alice_client, run):
    page = get(alice_client, "run", run, budget=8000, problem="cache_break").content.decode()
    listed = page.split('class="problem-list"')[1].split("</ul>")[0]
    assert "cache_break" in listed and "oversized_result" not in listed
    big = json.loads(native_run(rounds=80, size=40).decode())
    big["runs"][0]["title"] = "long"
    import_bytes(run.owner, "long.json", json.dumps(big).encode())
    long_run = Run.objects.get(title="long")
    page2 = get(alice_client, "run", long_run, page=2).content.decode()
    assert "page 2 of 2" in page2 and ">50</a>" in page2


def test_step_inspector_shows_the_request_and_navigation(alice_client, run):
    page = get(alice_client, "step", run, 12, budget=8000).content.decode()
    assert "Step 12" in page and 'id="previous-step"' in page and 'id="next-step"' in page
    assert "cached prefix ends here" in page
    assert "This tool result was cleared to keep the conversation" in page  # the note sent
    assert "cleared" in page and "&lt;b&gt;tag&lt;/b&gt;" in page and "<b>tag</b>" not in page
    assert get(alice_client, "step", run, 999).status_code == 404


def test_message_text_returns_the_whole_message_escaped(alice_client, run):
    response = get(alice_client, "message-text", run, 9, htmx=True)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.startswith('<pre class="text" tabindex="0">') and "&lt;b&gt;tag&lt;/b&gt;" in body
    assert len(body) > 4_000


def test_exports_csv_and_json(alice_client, run):
    text = get(alice_client, "export", run, "csv", budget=8000).content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    # Every token column says its size: this run is reconciled with its usage.
    assert rows[0][:5] == [
        "step",
        "history_messages",
        "sent_tokens_reconciled",
        "sent_tokens_estimated",
        "full_history_tokens_estimated",
    ]
    assert {"cached_tokens_reconciled", "measured_tokens", "cost_from"} <= set(rows[0])
    assert len(rows) == 32
    data = json.loads(get(alice_client, "export", run, "json", budget=8000).content)
    assert data["budget"] == 8000 and len(data["steps"]) == 31 and data["problems"]
    assert get(alice_client, "export", run, "xml").status_code == 404


def test_ledger_partial_has_one_row_per_tool_result(alice_client, run):
    page = get(alice_client, "ledger", run, htmx=True, budget=8000).content.decode()
    figure = json.loads(page.split('type="application/json">')[1].split("</script>")[0])
    (heatmap,) = figure["data"]
    assert len(heatmap["z"]) == 30 and len(heatmap["z"][0]) == 31
    assert 2 in {v for row in heatmap["z"] for v in row}  # something was cleared


def test_every_view_of_a_private_run_is_404_for_others(bob, run):
    client = Client()
    client.force_login(bob)
    for name, args in (
        ("run", ()),
        ("step", (0,)),
        ("ledger", ()),
        ("export", ("csv",)),
        ("message-text", (0,)),
        ("run-requests", ()),
    ):
        assert get(client, name, run, *args).status_code == 404, name


def test_a_run_without_requests_has_a_clear_empty_state(alice, alice_client):
    empty = {"contextsim": 1, "runs": [{"title": "empty", "messages": []}]}
    import_bytes(alice, "empty.json", json.dumps(empty).encode())
    run = Run.objects.get(title="empty")
    response = get(alice_client, "run", run)
    assert response.status_code == 200
    assert "This run has no requests to simulate." in response.content.decode()


def test_limits_far_above_a_small_run_do_not_squash_its_chart(alice_client, run):
    page = get(alice_client, "run", run, estimator="chars4").content.decode()
    figure = json.loads(
        page.split('id="figure-data" type="application/json">')[1].split("</script>")[0]
    )
    top = max(y or 0 for t in figure["data"] for y in t["y"])
    assert figure["layout"]["yaxis"]["range"] == [0, top * 1.15]
    assert "budget 400,000 and hard limit 1,000,000: far above" in page


def test_the_inspector_shows_the_policys_own_text_where_it_summarized(alice_client, run):
    query = {"policy": "codex_auto_compact", "window": "9000", "estimator": "chars4"}
    last = run.request_count - 1
    page = get(alice_client, "step", run, last, **query).content.decode()
    assert "Another language model started to solve this problem" in page
    assert "summarized" in page
    forgetting = {"policy": "openhands_amortized_forgetting", "max_size": "10"}
    page = get(alice_client, "step", run, last, **forgetting).content.decode()
    assert "Earlier events were forgotten: nothing stands in their place." in page


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"policy": "swe_agent_last_n", "n": "0"}, "n and polling must be at least 1"),
        ({"policy": "openhands_observation_masking", "attention_window": "0"}, "attention_window"),
        ({"policy": "openai_tool_output_trimmer", "recent_turns": "0"}, "recent_turns"),
        ({"policy": "openhands_amortized_forgetting", "max_size": "3"}, "max_size must be"),
        ({"policy": "deepagents", "trigger_fraction": "2"}, "trigger_fraction and keep_fraction"),
        ({"policy": "mythex", "keep_fraction": "7"}, "keep_fraction must be in (0, 1], got 7"),
        ({"policy": "mythex", "batch": "0"}, "batch must be at least 1"),
    ],
)
def test_parameters_a_policy_cannot_work_with_are_a_clear_400(alice_client, run, query, message):
    for name, args in (("run", ()), ("step", (1,))):
        response = get(alice_client, name, run, *args, **query)
        assert response.status_code == 400 and message in response.content.decode()
    collection_less = get(alice_client, "export", run, "csv", **query)
    assert collection_less.status_code == 400 and message in collection_less.json()["error"]


def test_a_run_of_one_request_is_drawn_as_points_on_whole_steps(alice, alice_client):
    one = {
        "contextsim": 1,
        "runs": [{"title": "one", "messages": [{"role": "user", "content": "hi"}]}],
    }
    import_bytes(alice, "one.json", json.dumps(one).encode())
    page = get(alice_client, "run", Run.objects.get(title="one")).content.decode()
    figure = json.loads(
        page.split('id="figure-data" type="application/json">')[1].split("</script>")[0]
    )
    assert all(t["mode"] == "markers" for t in figure["data"])
    assert figure["layout"]["xaxis"]["dtick"] == 1


def test_a_long_request_pages_its_items_and_collapses_what_was_left_out(alice, alice_client):
    import_bytes(alice, "long.json", native_run(rounds=120, size=400))
    long = Run.objects.get(title="dash")
    query = {"policy": "codex_auto_compact", "window": "9000", "estimator": "chars4"}
    last = long.request_count - 1
    page = get(alice_client, "step", long, last, **query).content.decode()
    # The summarized history is one collapsed card, not one card per message: the
    # summary that was sent is on the first page with it.
    assert page.count('class="msg msg-group') == 1
    assert "messages not sent (summarized)" in page
    assert page.count('<span class="badge muted">summary</span>') == 1
    assert "later →" not in page
    # Under `none` every one of its 241 messages is a card of its own: 200 a page.
    every = {"policy": "none", "estimator": "chars4"}
    first = get(alice_client, "step", long, last, **every).content.decode()
    assert "showing 1\u2013200" in first and "later →" in first and "← earlier" not in first
    later = get(alice_client, "step", long, last, **every, **{"from": "200"}).content.decode()
    assert "← earlier" in later and "later →" not in later
    assert "showing 201\u2013" in later


def test_next_problem_includes_info_problems(alice_client, run):
    from django.http import QueryDict

    from webapp.dashboard.analysis import analyse
    from webapp.dashboard.state import defaults_for, read_state

    page = get(alice_client, "step", run, 9, budget=8000).content.decode()
    query = QueryDict("policy=mythex&budget=8000")
    state = read_state(query, None, defaults_for(run.model, run.context_window))
    problems = analyse(run, state).problems
    first = min(p.step for p in problems if p.step > 9)
    assert {p.severity for p in problems if p.step == first} == {"info"}
    url = reverse("step", args=[run.public_id, first])
    assert f'id="next-problem" href="{url}' in page


def test_a_page_of_one_policy_simulates_it_alone_and_the_dashboard_three(
    alice_client, run, monkeypatch
):
    from webapp.dashboard import analysis

    policies: list[str] = []
    real = analysis.simulate

    def counted(sk, policy, *args, **kwargs):
        policies.append(policy.name)
        return real(sk, policy, *args, **kwargs)

    monkeypatch.setattr(analysis, "simulate", counted)
    query = {"policy": "mythex", "compare": "turns"}
    pages = {
        "run": reverse("run", args=[run.public_id]),
        "ledger": reverse("ledger", args=[run.public_id]),
        "step": reverse("step", args=[run.public_id, 1]),
        "export": reverse("export", args=[run.public_id, "json"]),
    }
    seen = {}
    for name, url in pages.items():
        policies.clear()
        assert alice_client.get(url, query).status_code == 200
        seen[name] = list(policies)
    assert seen["run"] == ["mythex", "turns", "as_logged"]
    assert seen["ledger"] == seen["step"] == seen["export"] == ["mythex"]


def test_the_window_card_says_where_the_hard_limit_comes_from(alice, alice_client, corpus):
    # A Claude Code 2.1 session on Opus 4.5 that compacted at 169k: Claude Code ran it on
    # 200,000, whatever window genai-prices gives the model.
    data = (corpus / "claude_code" / "sentinelpi_55210cba.jsonl").read_bytes()
    import_bytes(alice, "s.jsonl", data)
    run = Run.objects.get(format="claude-code", subagent=False)
    page = get(alice_client, "run", run, policy="as_logged").content.decode()
    card = page.split('id="window"')[1].split("</div>")[0]
    assert "200,000" in card or "200k" in card
    assert "Claude Code 2.1.29" in card
    # Its own compaction policy says where it compacts and why: revealed by the log.
    page = get(alice_client, "run", run, policy="claude_code_auto_compact").content.decode()
    trigger = page.split('id="trigger"')[1].split("</div>")[0]
    assert "revealed by the log" in trigger
    # A log with no window and a model genai-prices does not know says it was assumed.
    assert "stated in the log" in Run(context_window=1, window_source="").window_said
    assert "assumed" in Run(model="mystery-9", context_window=None).window_said


def test_prices_can_be_named_and_a_model_without_prices_is_named_not_priced(alice, alice_client):
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "a",
            "usage": {"input_tokens": 100_000, "model": "claude-sonnet-4-5"},
        },
        {"role": "user", "content": "more"},
        {
            "role": "assistant",
            "content": "b",
            "usage": {"input_tokens": 100_000, "model": "mystery-model-9"},
        },
    ]
    doc = {
        "contextsim": 1,
        "runs": [{"title": "priced", "model": "claude-sonnet-4-5", "messages": messages}],
    }
    import_bytes(alice, "p.json", json.dumps(doc).encode())
    run = Run.objects.get(title="priced")
    page = get(alice_client, "run", run, policy="as_logged").content.decode()
    card = page.split('id="measured-cost"')[1].split("</div>")[0]
    # Sonnet 4.5's 100,000 input tokens at $3 a million; the unknown model's are not priced.
    assert "$0.30" in card and "prices unknown for mystery-model-9" in card
    named = get(alice_client, "run", run, policy="as_logged", prices="openai").content.decode()
    card = named.split('id="measured-cost"')[1].split("</div>")[0]
    assert "$0.25" in card and "named" in card  # both at GPT-5's $1.25 a million
    bad = get(alice_client, "run", run, policy="as_logged", prices="cheap")
    assert bad.status_code == 400 and "prices: expected one of" in bad.content.decode()
