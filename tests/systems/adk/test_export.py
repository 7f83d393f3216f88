"""Google ADK export. google-adk cannot be installed beside this project's pinned
packages (it wants opentelemetry <= 1.44, websockets < 16, google-genai < 3), so the
snippet is checked as Python: it compiles, and the EventsCompactionConfig call it makes
holds exactly the chosen arguments. Where google-adk is installed it is also executed
and the App it builds carries the config."""

from __future__ import annotations

import ast
import importlib.util

import pytest

from contextsim.registry import ExportContext, export
from contextsim.systems.adk.policies import AdkParams


def config_arguments(text: str) -> dict[str, object]:
    tree = ast.parse(text)
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "EventsCompactionConfig"
    ]
    (call,) = calls
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}


@pytest.mark.parametrize(
    "params",
    [
        AdkParams(),
        AdkParams(compaction_interval=5, overlap_size=0),
        AdkParams(None, None, token_threshold=50_000, event_retention_size=7),
        AdkParams(2, 2, token_threshold=90_000, event_retention_size=0),
    ],
)
def test_the_config_holds_exactly_the_chosen_triggers(params):
    (snippet,) = export("adk_events_compaction", ExportContext(params, 1, 1))
    compile(snippet.text, "<snippet>", "exec")
    expected = {
        k: v
        for k, v in {
            "compaction_interval": params.compaction_interval,
            "overlap_size": params.overlap_size,
            "token_threshold": params.token_threshold,
            "event_retention_size": params.event_retention_size,
        }.items()
        if v is not None
    }
    assert config_arguments(snippet.text) == expected


@pytest.mark.skipif(
    importlib.util.find_spec("google.adk") is None, reason="google-adk is not installed here"
)
def test_the_snippet_builds_an_app_with_the_config_where_adk_is_installed():
    params = AdkParams(4, 2, token_threshold=60_000, event_retention_size=3)
    (snippet,) = export("adk_events_compaction", ExportContext(params, 1, 1))
    namespace: dict[str, object] = {}
    exec(snippet.text, namespace)
    config = namespace["app"].events_compaction_config  # type: ignore[attr-defined]
    assert (config.compaction_interval, config.overlap_size) == (4, 2)
    assert (config.token_threshold, config.event_retention_size) == (60_000, 3)
