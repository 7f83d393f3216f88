"""The Letta, Google ADK and Inspect AI policies render and simulate through the
dashboard with their parameters from the query string."""

from __future__ import annotations

import pytest

from tests.web.test_dashboard import get, run  # noqa: F401  (the run fixture)


@pytest.mark.parametrize(
    "query",
    [
        {"policy": "letta_summarizer", "window": "5000", "mode": "static_buffer"},
        {"policy": "letta_sliding_window", "window": "6000"},
        {"policy": "adk_events_compaction", "compaction_interval": "1", "overlap_size": "0"},
        {"policy": "inspect_compaction", "strategy": "trim", "window": "6000"},
    ],
)
def test_the_framework_policies_render_with_their_parameters(alice_client, run, query):  # noqa: F811
    response = get(alice_client, "run", run, estimator="chars4", **query)
    assert response.status_code == 200
    assert query["policy"] in response.content.decode()
    step = get(alice_client, "step", run, 1, estimator="chars4", **query)
    assert step.status_code == 200
