"""A web page on another site, opened in Chromium while a local-mode server runs, tries
to write into it as the local user: the form post a page may send without asking
(`no-cors`, `text/plain`) to the API and to the capture proxy, and a JSON post. None
creates a run or reaches the proxy's upstream; an agent's own call still does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.upstream import Upstream, serving

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RUN = {"contextsim": 1, "runs": [{"title": "planted", "messages": []}]}
CALL = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 10,
    "messages": [{"role": "user", "content": "planted"}],
}


def _evil(target: str) -> Any:
    """An ASGI app serving one page whose script posts to `target` every way it can."""
    script = f"""
      const target = {json.dumps(target)};
      const run = {json.dumps(json.dumps(RUN))};
      const call = {json.dumps(json.dumps(CALL))};
      const tries = [
        fetch(target + "/api/runs/", {{method: "POST", mode: "no-cors", body: run,
          headers: {{"Content-Type": "text/plain"}}}}),
        fetch(target + "/proxy/anthropic/v1/messages", {{method: "POST", mode: "no-cors",
          body: call, headers: {{"Content-Type": "text/plain"}}}}),
        fetch(target + "/api/runs/", {{method: "POST", body: run,
          headers: {{"Content-Type": "application/json"}}}}),
      ];
      Promise.allSettled(tries).then(() => {{ document.title = "done"; }});
    """
    page = f"<!doctype html><title>evil</title><script>{script}</script>".encode()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/html")],
            }
        )
        await send({"type": "http.response.body", "body": page})

    return app


@pytest.fixture
def local_server(settings) -> Iterator[tuple[str, Upstream]]:  # type: ignore[no-untyped-def]
    from webapp.asgi import application

    upstream = Upstream()
    settings.LOCAL_USER = "local"
    settings.LOCAL_USER_EXPLICIT = True
    with serving(upstream) as fake:
        settings.UPSTREAM_ANTHROPIC = fake
        with serving(application) as url:
            yield url, upstream


def test_a_page_on_another_site_cannot_write_into_a_local_server(chromium, local_server):
    from webapp.models import CapturedCall, Run

    url, upstream = local_server
    with serving(_evil(url)) as evil:
        context = chromium.new_context()
        try:
            page = context.new_page()
            page.goto(evil + "/")
            page.wait_for_function("document.title === 'done'", timeout=15_000)
        finally:
            context.close()
    assert Run.objects.count() == 0 and CapturedCall.objects.count() == 0
    assert upstream.seen == []  # nothing was forwarded in the local user's name
    # The agent on this machine (no browser headers) still writes as the local user.
    made = httpx.post(f"{url}/api/runs/", json=RUN)
    assert made.status_code == 201 and Run.objects.count() == 1
