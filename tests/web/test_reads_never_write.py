"""Reads never write: no GET of any page, partial, export or API answer writes a row of
the web app's own tables, whatever is missing (a skeleton never stored, a real
tokenizer's counts a live run left for later, an estimator report never made). What a
view needs it makes in memory; a job stores it (webapp.store.actions.derivation).

Who is calling is bookkeeping, not data: Django writes its session and a user's last
login the first time a browser comes, and an API key says when it was last used (at
most once a minute): the session and auth tables and that one column are left out."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextsim import model as core
from webapp.access.services.sharing import create_link
from webapp.access.services.tokens import create_token
from webapp.models import CustomRates, EstimatorReport, Message, Run, RunSkeleton
from webapp.store.actions.appends import do_append_messages, do_create_live_run
from webapp.store.cache import CACHE

LAST_USED = re.compile(r'UPDATE "?webapp_apitoken"? SET "?last_used"? = [^,]+ WHERE [^,]*$', re.I)
OWN = re.compile(r'\b(?:INTO|UPDATE|FROM)\s+"?(webapp_\w+)"?', re.I)


def _writes(queries: list[dict[str, str]]) -> list[str]:
    """The statements of `queries` that write a table of the web app."""
    out = []
    for q in queries:
        sql = q["sql"].lstrip()
        if sql.split(" ", 1)[0].upper() in ("INSERT", "UPDATE", "DELETE", "REPLACE"):
            table = OWN.search(sql)
            if table is not None and not LAST_USED.match(sql):
                out.append(sql[:160])
    return out


def _pages(run: Run, live: Run, token: str) -> list[str]:
    rid = run.public_id
    return [
        reverse("runs"),
        reverse("runs") + "?q=chapter",
        reverse("run", args=[rid]),
        reverse("run", args=[rid]) + "?estimator=o200k&policy=mythex&compare=turns",
        reverse("run", args=[rid]) + "?estimator=cl100k&policy=deepagents",
        reverse("run-requests", args=[rid]),
        reverse("run-live", args=[live.public_id]),
        reverse("run", args=[live.public_id]) + "?estimator=o200k",
        reverse("ledger", args=[rid]),
        reverse("run-estimators", args=[rid]),
        reverse("run-estimators", args=[rid]) + "?reference=cl100k",
        reverse("step", args=[rid, 3]),
        reverse("message-text", args=[rid, 2]),
        reverse("export", args=[rid, "csv"]),
        reverse("export", args=[rid, "json"]),
        reverse("collection", args=[run.collection.public_id]),
        reverse("collection-frontier", args=[run.collection.public_id]),
        reverse("playground"),
        reverse("sweeps"),
        reverse("sweep-new") + f"?run={rid}",
        reverse("tokens"),
        reverse("share", args=[rid]),
        reverse("api-runs"),
        reverse("api-run", args=[rid]),
        reverse("api-run", args=[live.public_id]) + "?estimator=o200k",
        reverse("upload"),
        f"/s/{token}/",
    ]


@pytest.mark.django_db(transaction=True)
def test_no_get_writes_a_row_of_the_web_apps_tables(fleet, alice, alice_client):
    run = fleet[0]
    # Nothing derived is stored: every view has to make what it shows.
    RunSkeleton.objects.all().delete()
    EstimatorReport.objects.all().delete()
    live = do_create_live_run(
        alice, core.Run("live", (core.Message("user", (core.TextPart("go"),)),))
    )
    live = do_append_messages(live, [core.Message("assistant", (core.TextPart("Привет " * 50),))])
    token = create_link(run, alice).token
    _, key = create_token(alice, "reads")
    CACHE.clear()
    rows = {m: m.objects.count() for m in (Run, Message, RunSkeleton, EstimatorReport)}
    for url in _pages(run, live, token):
        client = Client() if url.startswith(("/s/", "/api/")) else alice_client
        auth = {"Authorization": f"Bearer {key}"} if url.startswith("/api/") else {}
        for headers in (auth, {**auth, "HX-Request": "true"}):
            with CaptureQueriesContext(connection) as seen:
                response = client.get(url, headers=headers)
            assert response.status_code in (200, 204, 302), (url, response.status_code)
            assert _writes(seen.captured_queries) == [], url
    assert {m: m.objects.count() for m in rows} == rows
    assert not CustomRates.objects.exists()


def test_the_write_finder_finds_a_write_of_the_web_apps_tables():
    queries = [
        {"sql": 'INSERT INTO "webapp_runskeleton" ("run_id") VALUES (1)'},
        {"sql": 'UPDATE "django_session" SET "expire_date" = 1'},
        {"sql": 'SELECT 1 FROM "webapp_run"'},
        {"sql": 'DELETE FROM "webapp_estimatorreport" WHERE 1'},
    ]
    assert len(_writes(queries)) == 2
    last_used = (
        'UPDATE "webapp_apitoken" SET "last_used" = \'2026\' WHERE "webapp_apitoken"."id" = 1'
    )
    assert _writes([{"sql": last_used}]) == []
    on_postgres = last_used.replace("'2026'", "'2026'::timestamptz")
    assert on_postgres != last_used
    assert _writes([{"sql": on_postgres}]) == []
    assert _writes([{"sql": 'UPDATE "webapp_apitoken" SET "revoked" = 1, "last_used" = 2'}])
