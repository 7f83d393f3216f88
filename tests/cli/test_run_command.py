"""`python -m contextsim run -- COMMAND`: an agent of our own making calls Anthropic,
OpenAI and Gemini with their real SDKs, knowing nothing of contextsim; run by the command, its calls
go through the proxy into one named session, its exit code comes back, and the session's
link leads to its run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from django.test import Client

from tests.conftest import ROOT
from tests.upstream import Upstream, serving
from tests.web.test_proxy import recorded
from webapp.access.services.tokens import create_token
from webapp.models import Run

pytestmark = pytest.mark.django_db(transaction=True)

AGENT = textwrap.dedent(
    """
    import sys
    import anthropic, openai
    anthropic.Anthropic(api_key="sk-ant-test", max_retries=0).messages.create(
        model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
    )
    openai.OpenAI(api_key="sk-test", max_retries=0).chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hello"}]
    )
    from google import genai
    client = genai.Client(api_key="AIza-test")  # kept: a Client closes itself when let go
    client.models.generate_content(model="gemini-2.5-flash", contents="hey")
    sys.exit(3)
    """
)


@pytest.fixture
def server(settings) -> Iterator[str]:  # type: ignore[no-untyped-def]
    from webapp.asgi import application

    with serving(Upstream()) as fake:
        settings.UPSTREAM_ANTHROPIC = settings.UPSTREAM_OPENAI = settings.UPSTREAM_GEMINI = fake
        with serving(application) as url:
            yield url


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if "BASE_URL" not in k}
    return subprocess.run(
        [sys.executable, "-m", "contextsim", "run", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment,
        timeout=60,
        check=False,
    )


def test_an_agents_calls_go_into_its_named_session_and_its_exit_code_comes_back(server):
    from django.contrib.auth.models import User

    alice = User.objects.create_user("alice")
    key = create_token(alice, "run")[1]
    done = _run(
        "--server", server, "--key", key, "--name", "demo", "--", sys.executable, "-c", AGENT
    )
    assert done.returncode == 3, done.stderr
    assert f"{server}/sessions/demo/" in done.stderr
    calls = recorded(3)  # recorded once each answer has gone back
    assert [(c.provider, c.session) for c in calls] == [
        ("anthropic", "demo"),
        ("openai", "demo"),
        ("gemini", "demo"),
    ]
    client = Client()
    client.force_login(alice)
    opened = client.get("/sessions/demo/")
    run = Run.objects.filter(session_id="demo").order_by("id").first()
    assert opened.status_code == 302 and opened["Location"] == f"/runs/{run.public_id}/"
    waiting = client.get("/sessions/not-yet/")
    assert waiting.status_code == 200 and waiting["Refresh"] == "2"


def test_what_stops_it_before_the_agent_starts_is_said(server):
    nothing = _run("--server", "http://127.0.0.1:1", "--", "true")
    assert nothing.returncode == 2 and "nothing answers at http://127.0.0.1:1" in nothing.stderr
    no_command = _run("--server", server)
    assert no_command.returncode == 2 and "give the agent's command after --" in no_command.stderr
    missing = _run("--server", server, "--", "no-such-agent-here")
    assert missing.returncode == 127 and "command not found" in missing.stderr


def test_with_no_server_running_it_starts_one_then_the_agent(tmp_path):
    """At the default address (which must be free): `serve` is started in the background,
    answers before the agent runs, and outlives the command."""
    import urllib.error
    import urllib.request

    from contextsim.cli.run_agent import DEFAULT_SERVER

    def answers() -> bool:
        try:
            with urllib.request.urlopen(DEFAULT_SERVER, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    if answers():
        pytest.skip(f"{DEFAULT_SERVER} is taken: nothing to start")
    environment = {k: v for k, v in os.environ.items() if "BASE_URL" not in k}
    environment.pop("CONTEXTSIM_SERVER", None)
    environment.pop("DATABASE_URL", None)
    environment["CONTEXTSIM_DATA_DIR"] = str(tmp_path)
    child = [sys.executable, "-c", "import os; print(os.environ['ANTHROPIC_BASE_URL'])"]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "contextsim", "run", "--name", "s1", "--", *child],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=environment,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "starting a server" in done.stderr
        assert done.stdout.strip() == f"{DEFAULT_SERVER}/proxy/s/s1/anthropic"
        assert answers()  # it outlives the command, to look at the session
        assert (tmp_path / "serve.log").exists()
    finally:
        subprocess.run(
            ["pkill", "-f", f"serve --no-demo --port {DEFAULT_SERVER[-4:]}"], check=False
        )
