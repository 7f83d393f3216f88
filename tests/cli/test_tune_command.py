"""`python -m contextsim tune`: on real Claude Code sessions, each mechanism's
recommended setting, simulated on its own by `simulate`, gives the figures `tune`
says (cost and peak), and what happened is `simulate`'s as_logged; the recommendation
never sends a request over the limit and costs no more than any other setting of the
least risk; bad input is named."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from contextsim.cli.main import main
from tests.conftest import corpus_files

SESSIONS = corpus_files("claude_code", "codemie_session-624a*.jsonl")
CAPTURES = corpus_files("raw_api", "hanq_redacted_log-2026-06-15-09-15-50.jsonl")
ESTIMATOR = "chars4"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("path", SESSIONS)
def test_the_recommendation_is_what_simulate_says_of_it(path):
    code, out, err = _run("tune", str(path), "--estimator", ESTIMATOR, "--json")
    assert code == 0, err
    found = {m["mechanism"]: m for m in json.loads(out)["mechanisms"]}
    assert {"claude-code-auto-compact", "clear-tool-uses", "clear-thinking"} <= set(found)
    # What happened reads from the cache what the log measured: each response's
    # cache_read_input_tokens once (a response's blocks repeat its usage).
    usages = {}
    for line in path.read_text().splitlines():
        record = json.loads(line) if line.strip() else {}
        message = record.get("message") or {}
        if record.get("type") == "assistant" and message.get("usage") and message.get("id"):
            usages[message["id"]] = message["usage"]
    read = sum(u.get("cache_read_input_tokens", 0) for u in usages.values())
    for item in found.values():
        assert item["as_logged"]["cached"] == read
        assert item["as_logged"]["requests"] == len(usages)
    for name, item in found.items():
        logged = _simulate(path, "as_logged", {})
        assert item["as_logged"]["cost"] == pytest.approx(sum(s["cost"] for s in logged), abs=1e-5)
        (own,) = item["current"]["policies"]
        current = _simulate(path, own, {})
        assert item["current"]["cost"] == pytest.approx(sum(s["cost"] for s in current), abs=1e-5)
        best = item["recommended"]
        if name == "claude-code-tool-search":
            # A session's log holds no tool definitions: every setting sends the same.
            assert best is None and "hold no tool definitions" in item["why_none"]
            assert {p["cost"] for p in item["frontier"]} == {item["current"]["cost"]}
            continue
        if best is None and not item["frontier"]:
            # Said when every setting sends a request over the limit: the defaults do.
            assert "over the model's limit" in item["why_none"]
            assert sum(s["rejected_steps"] for s in _simulate(path, item["policy"], {})) > 0
            continue
        if best is None:
            # Or when no setting costs less than the runs as they ran.
            assert "costs less than the runs as they ran" in item["why_none"]
            assert min(p["cost"] for p in item["frontier"]) >= item["current"]["cost"]
            continue
        assert best["cost"] < item["current"]["cost"]
        assert best["rejected"] == 0
        # Nothing on the frontier is cheaper at the same or a lower risk.
        for point in item["frontier"]:
            assert point["cost"] >= best["cost"] or point["risk"] > best["risk"]
        runs = _simulate(path, item["policy"], best["setting"])
        assert best["cost"] == pytest.approx(sum(s["cost"] for s in runs), abs=1e-5), name
        assert best["peak"] == max(s["peak_sent"] for s in runs), name
        assert sum(s["rejected_steps"] for s in runs) == 0
        assert best["saved"] == pytest.approx(item["current"]["cost"] - best["cost"])
        assert item["simulations"] <= item["grid_simulations"]
        assert best["configuration"], name  # the real system's setting
    assert found["claude-code-auto-compact"]["recommended"] is not None


def _simulate(path, policy: str, setting: dict, *extra: str) -> list[dict]:
    argv = ["simulate", str(path), "--policy", policy, "--estimator", ESTIMATOR, "--json"]
    for key, value in setting.items():
        argv += ["--set", f"{key}={value}"]
    argv += extra
    code, out, err = _run(*argv)
    assert code == 0, err
    return [r for r in json.loads(out)["runs"] if not r["title"].startswith("compaction request")]


@pytest.mark.parametrize("path", SESSIONS)
def test_the_text_says_the_setting_its_saving_and_the_caveat(path):
    code, out, _ = _run(
        "tune", str(path), "--estimator", ESTIMATOR, "--mechanism", "claude-code-auto-compact"
    )
    assert code == 0
    assert "recommended: window=" in out and "saves $" in out
    assert "CLAUDE_CODE_AUTO_COMPACT_WINDOW=" in out
    assert "might have behaved otherwise" in out


def test_a_mechanism_no_run_can_use_is_named(tmp_path):
    log = tmp_path / "run.json"
    log.write_text(json.dumps({"contextsim": 1, "runs": [{"title": "t", "messages": []}]}))
    code, _, err = _run("tune", str(log))
    assert code == 2 and "no run here can use any mechanism" in err
    code, _, err = _run("tune", str(log), "--mechanism", "auto-compact")
    assert code == 2 and "--mechanism: unknown auto-compact; known: claude-code-auto-compact" in err
    # Asked for by name, a mechanism is tried on any run.
    code, out, err = _run("tune", str(log), "--mechanism", "codex-auto-compact", "--json")
    assert code == 0, err
    (item,) = json.loads(out)["mechanisms"]
    assert item["mechanism"] == "codex-auto-compact" and item["runs"] == ["t"]


@pytest.mark.parametrize("path", CAPTURES)
def test_tool_search_on_a_capture_is_what_simulate_says_deferring_mcp_tools(path):
    """A capture holds the requests' tool definitions: deferring its MCP tools
    (ENABLE_TOOL_SEARCH=true) costs what `simulate --defer 'mcp__*'` says, against the
    same policy with every definition sent."""
    mcp = {
        tool["name"]
        for line in path.read_text().splitlines()
        if line.strip()
        for tool in json.loads(line).get("request", {}).get("body", {}).get("tools") or []
        if str(tool.get("name", "")).startswith("mcp__")
    }
    assert mcp, "the capture defines MCP tools"
    code, out, err = _run(
        "tune",
        str(path),
        "--estimator",
        ESTIMATOR,
        "--mechanism",
        "claude-code-tool-search",
        "--json",
    )
    assert code == 0, err
    (item,) = json.loads(out)["mechanisms"]
    best = item["recommended"]
    assert best["setting"] == {"enable_tool_search": "true"}
    policy = "claude_code_auto_compact"
    deferred = _simulate(path, policy, {}, "--defer", "mcp__*")
    assert best["cost"] == pytest.approx(sum(s["cost"] for s in deferred), abs=1e-5)
    every = _simulate(path, policy, {})
    assert item["current"]["cost"] == pytest.approx(sum(s["cost"] for s in every), abs=1e-5)
    assert best["cost"] < item["current"]["cost"]
    assert any("ENABLE_TOOL_SEARCH=true" in c["text"] for c in best["configuration"])


@pytest.mark.parametrize("path", SESSIONS)
def test_any_policy_is_searched_over_the_values_given(path):
    """--policy with --grid: any policy, over the values given, each point what
    `simulate --set` says of it; bad values are named."""
    grid = ("--grid", "trigger=40000, 80000,120000", "--grid", "keep=2,1")
    code, out, err = _run(
        "tune",
        str(path),
        "--estimator",
        ESTIMATOR,
        "--policy",
        "langchain_clear_tool_uses",
        *grid,
        "--json",
    )
    assert code == 0, err
    (item,) = json.loads(out)["mechanisms"]
    assert item["mechanism"] == "policy:langchain_clear_tool_uses"
    assert item["grid_points"] == 6  # sorted numbers: keep 1, 2
    for point in item["frontier"]:
        runs = _simulate(path, "langchain_clear_tool_uses", point["setting"])
        assert point["cost"] == pytest.approx(sum(s["cost"] for s in runs), abs=1e-5)
    code, _, err = _run("tune", str(path), "--policy", "mythex", "--grid", "batch=many")
    assert code == 2 and "--grid: batch=many: batch: expected int, got 'many'" in err
    code, _, err = _run("tune", str(path), "--policy", "nope", "--grid", "x=1")
    assert code == 2 and "--policy: unknown policy 'nope'" in err
    code, _, err = _run("tune", str(path), "--grid", "batch=1")
    assert code == 2 and "give the policy it searches with --policy" in err
    code, _, err = _run("tune", str(path), "--policy", "mythex", "--grid", "small_factor=2,inf")
    assert code == 2 and "--grid: small_factor=inf: expected a finite number" in err
    code, _, err = _run(
        "tune", str(path), "--policy", "anthropic_clear_tool_uses", "--grid", "exclude_tools=Bash"
    )
    assert code == 2 and "exclude_tools: a list of values is set, not searched" in err
