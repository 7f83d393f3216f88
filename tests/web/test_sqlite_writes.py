"""On the embedded SQLite database one writer at a time holds the file: a large
import writes its messages unseen in batches, each counted before its own short
transaction, so an API append and a sign-in made while a long import runs succeed,
waiting at most for one batch.

The busy timeout is lowered to 6 s here (30 s by default): for this file an import
that counted and wrote in one transaction held the lock about 9 s, one that counts
first and writes once about 2.5 s, and batches under half a second (2-core machine).
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.web.test_jobs_and_commands import free_port
from tests.web.test_worker_crash import _big_log

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")),
    reason="about the embedded SQLite database: run in the pass without DATABASE_URL",
)

TIMEOUT = 6


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "CONTEXTSIM_DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'contextsim.sqlite3'}",
        "CONTEXTSIM_LOCAL_USER": "",
        "ALLOWED_HOSTS": "contextsim.test,127.0.0.1",  # a public host: people sign in
        "CONTEXTSIM_SQLITE_TIMEOUT": str(TIMEOUT),
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
    }


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


SETUP = """
from django.contrib.auth.models import User
from webapp.access.services.tokens import create_token
alice = User.objects.create_user("alice", password="pw-alice-123")
print(create_token(alice, "test")[1])
"""


def _request(
    url: str,
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    opener: urllib.request.OpenerDirector | None = None,
) -> tuple[int, str, float]:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    began = time.monotonic()
    try:
        with (opener or urllib.request.build_opener()).open(request, timeout=60) as answer:
            return answer.status, answer.read().decode(), time.monotonic() - began
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace"), time.monotonic() - began


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _sign_in(base: str) -> tuple[int, float]:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect())
    _, page, _ = _request(f"{base}/login/", opener=opener)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    form = {"username": "alice", "password": "pw-alice-123", "csrfmiddlewaretoken": token[1]}
    status, page, took = _request(
        f"{base}/login/",
        urllib.parse.urlencode(form).encode(),
        {"Referer": f"{base}/login/"},
        opener,
    )
    assert any(c.name == "sessionid" for c in jar) or status != 302
    return status, took


def test_appends_and_sign_ins_succeed_while_a_long_import_runs(tmp_path):
    env = _env(tmp_path)
    _manage(env, "migrate", "--verbosity=0")
    key = _manage(env, "shell", "-c", SETUP).strip().splitlines()[-1]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), "--no-demo", "--no-worker"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    log = tmp_path / "big.json"
    _big_log(log, 16_000)  # about 60 MB
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/login/", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        body = {"contextsim": 1, "runs": [{"title": "live", "messages": []}]}
        status, answer, _ = _request(f"{base}/api/runs/", json.dumps(body).encode(), auth)
        assert status == 201, answer
        run = json.loads(answer)["runs"][0]["id"]
        importer = subprocess.Popen(
            [sys.executable, "manage.py", "import_run", str(log), "--owner", "alice"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        database = tmp_path / "contextsim.sqlite3"
        while importer.poll() is None:
            with sqlite3.connect(database, timeout=30) as db:
                if db.execute("SELECT status FROM webapp_importjob").fetchall() == [("running",)]:
                    break
            time.sleep(0.05)
        appends: list[tuple[int, float]] = []
        sign_ins: list[tuple[int, float]] = []
        while importer.poll() is None:
            message = {"messages": [{"role": "user", "content": f"step {len(appends)}"}]}
            status, answer, took = _request(
                f"{base}/api/runs/{run}/messages/", json.dumps(message).encode(), auth
            )
            appends.append((status, took))
            assert status == 200, answer[:500]
            if len(sign_ins) < 5:  # under the sign-in rate limit
                sign_ins.append(_sign_in(base))
        _, err = importer.communicate()
        assert importer.returncode == 0, err[-2000:]
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
    assert len(appends) >= 3  # the import ran long enough to be tested
    assert all(status == 302 for status, _ in sign_ins)
    with sqlite3.connect(database) as db:
        stored = db.execute("SELECT message_count FROM webapp_run WHERE title = 'live'").fetchone()
    assert stored == (len(appends),)
    slowest = max(took for _, took in appends + sign_ins)
    print(
        f"{len(appends)} appends and {len(sign_ins)} sign-ins during the import, all "
        f"succeeded; slowest {slowest:.2f} s (busy timeout {TIMEOUT} s)"
    )
