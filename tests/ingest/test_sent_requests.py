"""Per-step exact requests (SWE-agent's ``query``): the observations the agent sent
shortened are replayed by as_logged from the step on which they first were; a request
that does not line up with the history is named and replayed from the history."""

from __future__ import annotations

import copy
import json
from typing import Any

from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import simulate_run
from contextsim.model import Elision, Run
from contextsim.registry import POLICIES
from contextsim.systems.native.format import NativeImporter, run_to_dict
from tests.ingest.examples import Examples
from tests.systems.swe_agent.test_format import SWE

EXAMPLES = Examples(SWE, "astropy__astropy-1.traj")
OLD = "Old environment output: (120 lines omitted)"
EST = ESTIMATORS["chars4"]


def _message(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, "agent": "main", **extra}


def _trajectory() -> dict[str, Any]:
    """Three calls; the third request sent the first observation shortened, as SWE-agent's
    last_n_observations history processor does."""
    history = [
        _message("system", "You are a programmer."),
        _message("user", "ISSUE:\nfix the bug"),
    ]
    for i in range(3):
        reply = f"Step {i}.\n\n```\ncat f{i}.py\n```"
        history.append(_message("assistant", reply, thought=f"Step {i}.", action=f"cat f{i}.py\n"))
        history.append(_message("user", f"line {i}\n" * 120))
    replies = [i for i, m in enumerate(history) if m["role"] == "assistant"]
    steps = []
    for k, end in enumerate(replies):
        query = copy.deepcopy(history[:end])
        if k == 2:
            query[3]["content"] = OLD
        steps.append({"response": history[end]["content"], "action": "", "query": query})
    return {"history": history, "trajectory": steps}


def test_an_observation_sent_shortened_is_an_elision_from_that_step_on():
    (run,) = EXAMPLES.parse(_trajectory()).runs
    assert run.elisions == (Elision(3, 2, OLD),)
    full = run.messages[3].tool_results[0].text
    assert full == "line 0\n" * 120  # the history stays whole, for what-ifs


def test_as_logged_sends_the_shortened_observation_and_a_what_if_the_whole_one():
    (run,) = EXAMPLES.parse(_trajectory()).runs
    logged = simulate_run(run, EST, POLICIES["as_logged"], budget=10**6, hard_limit=10**6)
    whole = simulate_run(run, EST, POLICIES["none"], budget=10**6, hard_limit=10**6)
    saved = EST.count("line 0\n" * 120) - EST.count(OLD)
    assert [r.sent for r in logged.records[:2]] == [r.sent for r in whole.records[:2]]
    assert whole.records[2].sent - logged.records[2].sent == saved
    assert logged.records[2].stage == "clear"
    assert logged.records[2].cached < logged.records[1].sent  # the cache breaks there


def test_a_request_that_does_not_line_up_is_named_and_replayed_from_the_history():
    data = _trajectory()
    del data["trajectory"][2]["query"][0]
    parsed = EXAMPLES.parse(data)
    (run,) = parsed.runs
    assert run.elisions == ()
    (warning,) = [w for w in parsed.warnings if "query" in w]
    assert "$.trajectory[2].query" in warning and "5 messages" in warning
    assert "the history has 6" in warning


def test_steps_whose_responses_are_not_the_historys_replies_are_not_used():
    data = _trajectory()
    data["trajectory"][1]["response"] = "something else"
    parsed = EXAMPLES.parse(data)
    assert parsed.runs[0].elisions == ()
    assert any("$.trajectory[1].response" in w for w in parsed.warnings)


def test_elisions_survive_the_native_format():
    (run,) = EXAMPLES.parse(_trajectory()).runs
    native = Examples(NativeImporter(), "run.json")
    (back,) = native.parse({"contextsim": 1, "runs": [run_to_dict(run)]}).runs
    assert isinstance(back, Run) and back.elisions == run.elisions
    bad = {"contextsim": 1, "runs": [{**run_to_dict(run), "elisions": [{"message": "3"}]}]}
    assert "$.runs[0].elisions[0].message" in native.error(bad)


def test_an_elision_line_belongs_to_the_run_of_its_header():
    lines = [
        {"contextsim": 1, "type": "run", "title": "a"},
        {"type": "message", "role": "user", "content": "x" * 400},
        {"type": "message", "role": "assistant", "content": "ok"},
        {"type": "elision", "message": 0, "from_step": 1, "text": "(shortened)"},
        {"contextsim": 1, "type": "run", "title": "b"},
        {"type": "message", "role": "user", "content": "y"},
    ]
    raw = "\n".join(json.dumps(line) for line in lines).encode()
    first, second = Examples(NativeImporter(), "runs.jsonl").parse(raw).runs
    assert first.elisions == (Elision(0, 1, "(shortened)"),)
    assert second.elisions == ()
