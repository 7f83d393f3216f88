"""The capture proxy's Gemini upstream, driven by Google's own google-genai SDK: calls to
`generateContent` and `streamGenerateContent` pass through unchanged and are recorded
as one live run, its model from the URL, its usage from `usageMetadata` (the prompt's
count holds the cached tokens), a function call and its answer paired."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google import genai
from google.genai import types

from tests.upstream import Reply, Upstream, serving
from tests.web.test_proxy import recorded
from webapp.access.services.tokens import create_token
from webapp.models import Message, Run

pytestmark = pytest.mark.django_db(transaction=True)

GOOGLE_KEY = "AIzaSy-fake-google-key-000000"


@pytest.fixture
def upstream() -> Upstream:
    return Upstream()


@pytest.fixture
def proxy(settings, upstream: Upstream) -> Iterator[str]:  # type: ignore[no-untyped-def]
    from webapp.asgi import application

    with serving(upstream) as fake:
        settings.UPSTREAM_GEMINI = fake
        with serving(application) as url:
            yield url


def _client(proxy: str, key: str) -> genai.Client:
    options = types.HttpOptions(base_url=f"{proxy}/proxy/k/{key}/s/g1/gemini")
    return genai.Client(api_key=GOOGLE_KEY, http_options=options)


def test_gemini_calls_through_the_sdk_become_one_live_run(proxy, upstream, alice):
    key = create_token(alice, "gemini")[1]
    client = _client(proxy, key)
    upstream.script(Reply(calls=[("read_file", {"path": "a.py"})]), "It prints hello.")
    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="read_file",
                description="Read a file",
                parameters=types.Schema(
                    type="OBJECT", properties={"path": types.Schema(type="STRING")}
                ),
            )
        ]
    )
    config = types.GenerateContentConfig(system_instruction="Be brief.", tools=[tool])
    ask = types.Content(role="user", parts=[types.Part(text="What does a.py do?")])
    first = client.models.generate_content(model="gemini-2.5-flash", contents=[ask], config=config)
    call = first.candidates[0].content.parts[0].function_call
    assert call.name == "read_file"
    answer = types.Content(
        role="user",
        parts=[types.Part.from_function_response(name="read_file", response={"text": "print(1)"})],
    )
    second = client.models.generate_content_stream(
        model="gemini-2.5-flash",
        contents=[ask, first.candidates[0].content, answer],
        config=config,
    )
    text = "".join(chunk.text or "" for chunk in second)
    assert text == "It prints hello."
    calls = recorded(2)
    assert {c.provider for c in calls} == {"gemini"} and all(c.session == "g1" for c in calls)
    # The provider's key went upstream and nowhere else.
    assert upstream.seen[0].headers["x-goog-api-key"] == GOOGLE_KEY
    (run,) = Run.objects.filter(format="capture")
    assert run.model == "gemini-2.5-flash" and run.request_count == 2
    rows = list(Message.objects.filter(run=run).order_by("index"))
    kinds = [m.kind for m in rows]
    assert kinds == ["tools", "system", "user", "tool_call", "tool_result", "assistant"]
    tool_call = rows[3].parts[0]
    result = rows[4].parts[0]
    assert tool_call["name"] == "read_file" and result["call_id"] == tool_call["id"]
    # Usage: the prompt count includes the cached tokens; the fake caches 7.
    sent = [len(s.body) // 4 for s in upstream.seen]
    measured = [(m.usage_input, m.usage_cache_read) for m in rows if m.usage_input is not None]
    assert measured == [(n - 7, 7) for n in sent]
    assert rows[-1].parts[0]["text"] == "It prints hello."
