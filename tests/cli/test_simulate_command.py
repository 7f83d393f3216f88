"""`python -m contextsim simulate`: the JSON contract, --steps, --set and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, corpus_files, log_entries


def native(rounds: int = 12, size: int = 8_000) -> dict:
    return {
        "contextsim": 1,
        "runs": [
            {
                "title": "t",
                "messages": [
                    {"role": "system", "content": "s" * 400},
                    {"role": "user", "content": "task"},
                    *[
                        m
                        for i in range(rounds)
                        for m in (
                            {
                                "role": "assistant",
                                "content": [
                                    {
                                        "type": "tool_call",
                                        "id": f"c{i}",
                                        "name": "read",
                                        "arguments": {"i": i},
                                    }
                                ],
                            },
                            {
                                "role": "tool",
                                "content": [
                                    {"type": "tool_result", "call_id": f"c{i}", "text": "x" * size}
                                ],
                            },
                        )
                    ],
                    {"role": "assistant", "content": "done"},
                ],
            }
        ],
    }


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextsim", "simulate", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


def write(tmp_path: Path, **shape: int) -> str:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(native(**shape)))
    return str(path)


def test_json_has_the_contract_keys_per_run_and_policy(tmp_path):
    result = cli(
        write(tmp_path),
        "--policy",
        "none",
        "--policy",
        "mythex",
        "--budget",
        "8000",
        "--estimator",
        "chars4",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)["runs"]
    assert [r["policy"] for r in runs] == ["none", "mythex"]
    keys = {
        "title",
        "policy",
        "steps",
        "rejected_steps",
        "over_budget_steps",
        "peak_sent",
        "total_sent",
        "cached_tokens",
        "completed",
        "problems",
    }
    assert all(keys <= set(r) for r in runs)
    none, mythex = runs
    assert none["steps"] == 13 and none["peak_sent"] > 8000 and none["over_budget_steps"] > 0
    assert mythex["over_budget_steps"] == 0 and mythex["peak_sent"] <= 8000
    assert all({"step", "kind", "detail"} <= set(p) for p in none["problems"])


def test_steps_adds_one_record_per_request_with_a_letter_per_message(tmp_path):
    result = cli(
        write(tmp_path),
        "--policy",
        "mythex",
        "--budget",
        "8000",
        "--estimator",
        "chars4",
        "--steps",
        "--json",
    )
    (run,) = json.loads(result.stdout)["runs"]
    records = run["step_records"]
    assert [r["step"] for r in records] == list(range(13))
    for r in records:
        assert len(r["dispositions"]) == 2 + 2 * r["step"]
        assert set(r["dispositions"]) <= set("kctso")
    assert "c" in records[-1]["dispositions"] and records[-1]["stage"] == "clear"


def test_set_changes_a_parameter_and_rejects_unknown_ones(tmp_path):
    path = write(tmp_path, rounds=40, size=1_000)
    common = ("--policy", "mythex", "--budget", "4000", "--estimator", "chars4", "--json")
    one = json.loads(cli(path, *common, "--set", "batch=1").stdout)["runs"][0]
    four = json.loads(cli(path, *common).stdout)["runs"][0]
    # Clearing in batches keeps the cached prefix for several requests.
    assert four["cached_tokens"] > one["cached_tokens"]
    assert four["cost"] < one["cost"]
    bad = cli(path, "--policy", "mythex", "--set", "bogus=1")
    assert bad.returncode == 2 and "no chosen policy has parameter bogus" in bad.stderr
    bad = cli(path, "--policy", "mythex", "--set", "batch=many")
    assert bad.returncode == 2 and "batch: expected int, got 'many'" in bad.stderr


def test_readable_output_names_the_policy_and_problems(tmp_path):
    out = cli(
        write(tmp_path), "--policy", "none", "--budget", "8000", "--estimator", "chars4"
    ).stdout
    assert "t — none (chars4, budget 8,000" in out
    assert "! over_budget at step" in out


def test_unknown_policy_demo_and_negative_budget_fail_clearly(tmp_path):
    assert "unknown policy 'nope'" in cli(write(tmp_path), "--policy", "nope").stderr
    assert "unknown demo; expected one of" in cli("demo:nope").stderr
    negative = cli(write(tmp_path), "--budget", "-5")
    assert negative.returncode == 2 and "expected a positive number of tokens" in negative.stderr


def test_prices_can_be_chosen_and_edited(tmp_path):
    path = write(tmp_path)
    common = ("--budget", "8000", "--estimator", "chars4", "--json")
    anthropic = json.loads(cli(path, *common).stdout)["runs"][0]["cost"]
    openai = json.loads(cli(path, *common, "--prices", "openai").stdout)["runs"][0]["cost"]
    doubled = json.loads(cli(path, *common, "--price", "input=6", "--price", "output=30").stdout)[
        "runs"
    ][0]["cost"]
    assert openai < anthropic and doubled == pytest.approx(anthropic * 2, rel=1e-6)
    bad = cli(path, "--price", "gold=1")
    assert bad.returncode == 2 and "unknown price 'gold'" in bad.stderr


def _measured(rounds: int = 12, unlogged: int = 5_000) -> dict:
    """A native log whose every response measured its request as about a quarter of the
    history's characters plus `unlogged` tokens the log does not hold."""
    data = native(rounds, 2_000)
    chars = 0
    for message in data["runs"][0]["messages"]:
        if message["role"] == "assistant":
            message["usage"] = {"input_tokens": chars // 4 + unlogged, "output_tokens": 10}
        chars += len(json.dumps(message["content"]))
    return data


def test_runs_carry_their_reconciliation_and_steps_their_estimated_and_measured(tmp_path):
    path = tmp_path / "measured.json"
    path.write_text(json.dumps(_measured()))
    (run,) = json.loads(cli(str(path), "--estimator", "chars4", "--json", "--steps").stdout)["runs"]
    assert run["policy"] == "as_logged"
    rec = run["reconciliation"]
    assert rec["fitted_on"] == 13 and rec["source"] == "fitted"
    assert abs(rec["overhead"] - 5_000) <= 500
    assert run["measured_cost"] is not None
    for record in run["step_records"]:
        assert {"sent", "estimated", "measured"} <= set(record)
        assert abs(record["sent"] - record["measured"]) <= 0.05 * record["measured"]
    plain = json.loads(
        cli(str(path), "--estimator", "chars4", "--json", "--steps", "--no-reconcile").stdout
    )["runs"][0]
    assert plain["reconciliation"] is None
    assert all(r["sent"] == r["estimated"] for r in plain["step_records"])
    set_by_hand = json.loads(
        cli(str(path), "--estimator", "chars4", "--json", "--overhead", "0", "--scale", "1").stdout
    )["runs"][0]["reconciliation"]
    assert set_by_hand["overhead"] == 0 and set_by_hand["source"] == "set"
    bad = cli(str(path), "--scale", "0")
    assert bad.returncode == 2 and "expected a ratio above 0" in bad.stderr


CAPTURES = corpus_files("raw_api", "hanq_redacted_log-2026-06-15-09-15-50.jsonl")


@pytest.mark.parametrize("path", CAPTURES)
def test_defer_and_remove_say_what_they_did_to_each_run(path):
    server = set()
    for entry in log_entries(path):
        body = (entry.get("request") or {}).get("body")
        if isinstance(body, dict):
            server |= {
                t["name"]
                for t in body.get("tools") or []
                if t["name"].startswith("mcp__codegraph__")
            }
    done = cli(str(path), "--policy", "none", "--defer", "mcp__codegraph__*", "--json")
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["runs"]
    assert {tuple(r["deferred"]) for r in runs} >= {tuple(sorted(server))}
    # A run that defines none of them is simulated with every definition, and says so.
    assert "matches no tool this log defines" in done.stderr
    removed = cli(str(path), "--policy", "none", "--remove", "mcp__codegraph__*", "--json")
    assert any(sorted(r["removed"]) == sorted(server) for r in json.loads(removed.stdout)["runs"])
    for bad, error in (("--defer", "a*b"), ("--remove", "x*y")):
        failed = cli(str(path), "--policy", "none", bad, "a*b" if bad == "--defer" else "x*y")
        assert (
            failed.returncode != 0
            and error in failed.stderr
            and "may only end a pattern" in failed.stderr
        )
    replay = cli(str(path), "--defer", "Bash")
    assert replay.returncode != 0 and "choose a policy" in replay.stderr
