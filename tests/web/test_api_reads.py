"""Reading through the API: `GET /api/runs/` lists the runs a caller may see (newest
first, paged, by format), `GET /api/runs/<id>/` gives a run's requests with measured
usage and estimated system, tools and messages tokens; single-user local mode needs no
key."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.ingest.detect import parse_stream
from webapp.access.services.tokens import create_token
from webapp.models import Message, Run, Visibility
from webapp.store.actions.saving import do_save_runs

pytestmark = pytest.mark.django_db

LIST = "/api/runs/"


@pytest.fixture
def key(alice) -> str:
    return create_token(alice, "script")[1]


@pytest.fixture
def api(key) -> Client:
    return Client(headers={"Authorization": f"Bearer {key}"})


def _runs(owner, *titles: str, format: str = "native", visibility: str = "private") -> list[Run]:
    """Bare runs, the first the oldest: created a minute apart."""
    start = timezone.now() - timedelta(hours=1)
    made = []
    for n, title in enumerate(titles):
        run = Run.objects.create(owner=owner, title=title, format=format, visibility=visibility)
        Run.objects.filter(pk=run.pk).update(created=start + timedelta(minutes=n))
        made.append(run)
    return made


def _titles(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [r["title"] for r in response.json()["runs"]]


# --- listing ---------------------------------------------------------------------


def test_runs_are_listed_newest_first_with_their_figures(api, alice):
    _runs(alice, "old", "middle", "new")
    body = api.get(LIST).json()
    assert [r["title"] for r in body["runs"]] == ["new", "middle", "old"]
    first = body["runs"][0]
    assert set(first) >= {"id", "title", "format", "model", "requests", "live", "messages"}
    assert first["url"].endswith(reverse("run", args=[first["id"]]))
    assert first["live"] is False and body["next"] is None


def test_runs_created_at_the_same_instant_are_listed_newest_row_first(api, alice):
    runs = _runs(alice, "a", "b", "c")
    Run.objects.update(created=timezone.now())
    assert _titles(api.get(LIST)) == [r.title for r in reversed(runs)]


def test_another_users_private_runs_are_never_listed_but_public_ones_are(api, alice, bob):
    _runs(alice, "mine")
    _runs(bob, "bob's secret")
    _runs(None, "demo", visibility=Visibility.PUBLIC)
    assert sorted(_titles(api.get(LIST))) == ["demo", "mine"]


def test_pages_follow_next_until_every_run_was_listed_once(api, alice):
    _runs(alice, *[f"r{i}" for i in range(5)])
    Run.objects.filter(title__in=["r1", "r2"]).update(created=timezone.now())  # a tie
    seen, url = [], f"{LIST}?limit=2"
    while url:
        body = api.get(url).json()
        assert len(body["runs"]) <= 2
        seen += [r["title"] for r in body["runs"]]
        url = body["next"]
    assert seen == ["r2", "r1", "r4", "r3", "r0"]


def test_a_page_keeps_the_format_filter_in_its_next_link(api, alice):
    _runs(alice, "c1", "c2", "c3", format="codex")
    _runs(alice, "n1", format="native")
    first = api.get(f"{LIST}?format=codex&limit=2").json()
    assert [r["title"] for r in first["runs"]] == ["c3", "c2"]
    assert _titles(api.get(first["next"])) == ["c1"]


def test_the_format_filter_lists_only_that_format(api, alice):
    _runs(alice, "a claude run", format="claude_code")
    _runs(alice, "a codex run", format="codex")
    assert _titles(api.get(f"{LIST}?format=codex")) == ["a codex run"]
    assert _titles(api.get(f"{LIST}?format=nothing")) == []


@pytest.mark.parametrize("query", ["limit=0", "limit=1001", "limit=ten", "before=nope"])
def test_a_bad_page_query_is_refused_naming_the_parameter(api, alice, query):
    _runs(alice, "a")
    response = api.get(f"{LIST}?{query}")
    assert response.status_code == 400
    assert query.split("=")[0] in response.json()["error"]


def test_the_limit_defaults_to_100_and_reaches_1000(api, alice):
    Run.objects.bulk_create([Run(owner=alice, title=f"r{i}", format="native") for i in range(1001)])
    assert len(api.get(LIST).json()["runs"]) == 100
    most = api.get(f"{LIST}?limit=1000").json()
    assert len(most["runs"]) == 1000 and most["next"] is not None


def test_before_another_users_private_run_is_refused(api, bob):
    (secret,) = _runs(bob, "bob's secret")
    assert api.get(f"{LIST}?before={secret.public_id}").status_code == 400


def test_a_streamed_run_is_listed_live_and_an_imported_one_not(api, alice):
    header = {"contextsim": 1, "runs": [{"title": "streamed", "messages": []}]}
    created = api.post(LIST, json.dumps(header), content_type="application/json")
    assert created.status_code == 201  # POST on the same path still creates
    _runs(alice, "imported")
    live = {r["title"]: r["live"] for r in api.get(LIST).json()["runs"]}
    assert live == {"streamed": True, "imported": False}


def test_other_methods_on_the_runs_path_are_refused(api):
    assert api.put(LIST).status_code == 405


# --- who may call ----------------------------------------------------------------


def test_without_a_key_outside_local_mode_the_api_answers_401(alice, alice_client):
    _runs(alice, "mine")
    for client in (Client(), alice_client):  # a signed-in browser's cookie is no key
        response = client.get(LIST)
        assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer"


@pytest.fixture
def implied(settings):
    """As `serve` on 127.0.0.1 sets it: implied, not configured."""
    settings.LOCAL_USER, settings.LOCAL_USER_EXPLICIT = "local", False
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1", "contextsim.example.org"]


LOCAL = {"HTTP_HOST": "127.0.0.1:8000", "REMOTE_ADDR": "127.0.0.1"}


def test_in_local_mode_a_local_script_needs_no_key_and_leaves_no_session(implied):
    header = {"contextsim": 1, "runs": [{"title": "from a script", "messages": []}]}
    client = Client()
    made = client.post(LIST, json.dumps(header), content_type="application/json", **LOCAL)
    assert made.status_code == 201
    listed = client.get(LIST, **LOCAL)
    assert _titles(listed) == ["from a script"]
    assert Run.objects.get().owner.username == "local"
    assert Session.objects.count() == 0 and "sessionid" not in listed.cookies


def test_pages_in_local_mode_still_sign_the_visitor_in(implied):
    assert Client().get(reverse("tokens"), **LOCAL).status_code == 200
    assert Session.objects.count() == 1


def test_in_local_mode_a_wrong_key_is_still_401(implied):
    response = Client().get(LIST, HTTP_AUTHORIZATION="Bearer wrong", **LOCAL)
    assert response.status_code == 401
    basic = Client().get(LIST, HTTP_AUTHORIZATION="Basic dXNlcjpwdw==", **LOCAL)
    assert basic.status_code == 401


def test_in_local_mode_a_proxied_request_without_a_key_is_401(implied):
    proxied = {**LOCAL, "HTTP_X_FORWARDED_FOR": "8.8.8.8"}
    assert Client().get(LIST, **proxied).status_code == 401
    remote = {"HTTP_HOST": "contextsim.example.org", "REMOTE_ADDR": "127.0.0.1"}
    assert Client().get(LIST, **remote).status_code == 401


def test_in_local_mode_a_key_still_names_its_owner(implied, key, alice):
    _runs(alice, "alice's")
    response = Client().get(LIST, HTTP_AUTHORIZATION=f"Bearer {key}", **LOCAL)
    assert _titles(response) == ["alice's"]


# --- one run's requests ----------------------------------------------------------

TOOL = '{"name": "read", "description": "Read a file by its path"}'
ARGS = '{"path": "notes.txt"}'
RESULT = "Глава первая. " * 9 + "The end."
TEXTS = {
    "system": "You are a careful agent.",
    "user": "Прочитай файл notes.txt, please.",
    "done": "Done: it is a chapter.",
    "again": "And the next one?",
}


def _log() -> bytes:
    call = {"type": "tool_call", "id": "c1", "name": "read", "arguments": ARGS}
    usage = {"input_tokens": 120, "cache_read": 30, "cache_write": 5, "output_tokens": 9}
    messages = [
        {"role": "system", "content": TEXTS["system"]},
        {"role": "system", "content": [{"type": "tool_spec", "name": "read", "definition": TOOL}]},
        {"role": "user", "content": TEXTS["user"]},
        {"role": "assistant", "content": [call], "usage": usage},
        {"role": "tool", "content": [{"type": "tool_result", "call_id": "c1", "text": RESULT}]},
        {"role": "assistant", "content": TEXTS["done"], "usage": {"input_tokens": 400}},
        {"role": "user", "content": TEXTS["again"]},
    ]
    run = {"title": "checked", "model": "claude-sonnet-4-5", "messages": messages}
    return json.dumps({"contextsim": 1, "runs": [run]}).encode()


def _saved(owner, estimators: tuple[str, ...]) -> Run:
    parsed = parse_stream("checked.json", io.BytesIO(_log()))
    return do_save_runs(parsed, owner=owner, estimators=estimators)[0]


def _expected(count: Callable[[str], int]) -> list[dict[str, int | None]]:
    """The steps as the test works them out from its own texts: each message its
    parts' tokens plus the per-message overhead; request k sends every message before
    the k-th assistant message."""

    def each(*texts: str) -> int:
        return sum(count(t) for t in texts) + MESSAGE_OVERHEAD

    system, tools = each(TEXTS["system"]), each(TOOL)
    user, call, result = each(TEXTS["user"]), each("read", ARGS), each(RESULT)
    done, again = each(TEXTS["done"]), each(TEXTS["again"])
    nothing = {"input": None, "cache_read": None, "cache_write": None, "output": None}
    first = {"input": 120, "cache_read": 30, "cache_write": 5, "output": 9}
    second = {"input": 400, "cache_read": 0, "cache_write": 0, "output": 0}
    sizes = [(3, user), (5, user + call + result), (7, user + call + result + done + again)]
    return [
        {"step": k, "history": n, **usage, "system": system, "tools": tools, "messages": rest}
        for k, ((n, rest), usage) in enumerate(zip(sizes, [first, second, nothing], strict=True))
    ]


def chars4(text: str) -> int:
    return math.ceil(len(text) / 4)


def test_a_runs_requests_carry_usage_and_stored_counts_of_system_tools_and_messages(api, alice):
    run = _saved(alice, ("chars4",))
    body = api.get(reverse("api-run", args=[run.public_id]) + "?estimator=chars4").json()
    assert body["estimator"] == "chars4" and body["requests"] == 2
    assert body["steps"] == _expected(chars4)


def test_an_estimator_whose_counts_are_not_stored_counts_from_the_skeleton(api, alice):
    run = _saved(alice, ("chars4",))
    assert not any("script" in m.counts for m in Message.objects.filter(run=run))
    body = api.get(reverse("api-run", args=[run.public_id]) + "?estimator=script").json()
    assert body["estimator"] == "script"
    assert body["steps"] == _expected(ESTIMATORS["script"].count)


def test_the_default_estimator_is_the_dashboards(api, alice):
    run = _saved(alice, ("o200k", "chars4"))
    body = api.get(reverse("api-run", args=[run.public_id])).json()
    assert body["estimator"] == "o200k"
    assert body["steps"] == _expected(ESTIMATORS["o200k"].count)


def test_while_a_tokenizer_still_counts_its_calibrated_stand_in_answers(api, alice):
    run = _saved(alice, ("calibrated-o200k",))
    Run.objects.filter(pk=run.pk).update(counting=["o200k"])
    body = api.get(reverse("api-run", args=[run.public_id])).json()
    assert body["estimator"] == "calibrated-o200k"
    assert body["steps"] == _expected(ESTIMATORS["calibrated-o200k"].count)


def test_an_unknown_estimator_is_refused_naming_it(api, alice):
    run = _saved(alice, ("chars4",))
    response = api.get(reverse("api-run", args=[run.public_id]) + "?estimator=abacus")
    assert response.status_code == 400 and "abacus" in response.json()["error"]


def test_a_public_run_can_be_read_and_another_users_private_one_cannot(api, bob):
    (public,) = _runs(None, "demo", visibility=Visibility.PUBLIC)
    (secret,) = _runs(bob, "bob's secret")
    assert api.get(reverse("api-run", args=[public.public_id])).json()["steps"] == []
    assert api.get(reverse("api-run", args=[secret.public_id])).status_code == 404


def test_a_long_run_answers_in_a_few_queries_whatever_its_requests(
    api, alice, django_assert_max_num_queries
):
    size = 20_000
    run = Run.objects.create(
        owner=alice, title="long", format="native", message_count=size, request_count=size // 2
    )
    roles = ["user", "assistant"] * (size // 2)
    Message.objects.bulk_create(
        Message(
            run=run,
            index=i,
            role=role,
            kind=role,
            parts=[],
            content_hash=str(i),
            counts={"chars4": 10 + i % 7},
            usage_input=i if role == "assistant" else None,
        )
        for i, role in enumerate(roles)
    )
    with django_assert_max_num_queries(8):
        body = api.get(reverse("api-run", args=[run.public_id]) + "?estimator=chars4").json()
    steps = body["steps"]
    assert len(steps) == size // 2
    assert steps[-1]["messages"] == sum(10 + i % 7 for i in range(size - 1))
    assert steps[-1]["input"] == size - 1 and steps[0]["system"] == 0


def test_a_compacted_runs_steps_are_what_each_request_sent(api, alice, corpus):
    # The API, the dashboard and the estimators' page read a logged compaction alike:
    # after it, a request sends the summary and what followed, not the whole history.
    from tests.web.test_import_service import import_bytes

    path = corpus / "claude_code" / "codemie_session-624a4a58.jsonl"
    import_bytes(alice, "s.jsonl", path.read_bytes())
    run = Run.objects.get(format="claude-code", subagent=False, compaction_request=False)
    steps = api.get(reverse("api-run", args=[run.public_id]) + "?estimator=o200k").json()["steps"]
    measured = [s["input"] + s["cache_read"] + s["cache_write"] for s in steps if s["input"]]
    falls = [k for k in range(1, len(measured)) if measured[k] < 0.6 * measured[k - 1]]
    (fall,) = falls
    sent = [s["system"] + s["tools"] + s["messages"] for s in steps if s["input"]]
    assert sent[fall] < 0.6 * sent[fall - 1]
    assert steps[fall]["history"] < steps[fall - 1]["history"]
