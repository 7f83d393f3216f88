"""The truth on real logs nobody here wrote: what `as_logged` sends, reconciled, is what
the provider measured (median within 5%, 9 requests in 10 within 15%, requests after a
compaction included); Claude Code's auto-compaction, with the defaults it takes from
the log, fires where the real one did and nowhere else; under as_logged the simulated
cost is the measured cost, which is the logged usage at genai-prices' prices.

Figures come from the files: the compaction's place is found by reading the JSONL
lines, the prices by asking genai-prices directly."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import MAX_TOKENS, reconcile_skeleton, simulate
from contextsim.ingest.detect import parse_path
from contextsim.registry import POLICIES
from contextsim.truth.prices import model_facts, run_measured_cost
from tests.conftest import corpus_files

LOGS = [
    "claude_code/codemie_session-624a4a58.jsonl",
    "claude_code/codemie_session-196820da.jsonl",
    "claude_code/ccviewer_5c0375b4.jsonl",
    "claude_code/ccviewer_fe5e1c67.jsonl",
    "codex/localpush_redacted_rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
    "openai_chat/inspect_2025-05-12T20-27-36-04-00_browser.json",
    "openhands/basic.json",
    "claude_code/tpuinf_19a2e244.jsonl",
    "claude_code/sentinelpi_55210cba.jsonl",
    "codex/zoqore_rollout-2025-12-09T18-16-09-019b0566-9af8-7861-b806-46997f51323a.jsonl",
    "codex/zoqore_rollout-2026-02-05T16-47-57-019c2fc6-b5ab-76c1-848e-5d2f90e8cd79.jsonl",
    "gemini_cli/vct_session-8a20078e.json",
    "gemini_cli/vct_session-0ab84937.jsonl",
    "raw_api/hanq_redacted_log-2026-06-15-09-15-50.jsonl",
]
ESTIMATOR = ESTIMATORS["script"]


def _replay(run, policy="as_logged"):
    sk = build(run, ESTIMATOR)
    facts = model_facts(run.model)
    prices = facts.prices if facts else None
    extra = {"prices": prices} if prices else {}
    rec = reconcile_skeleton(sk)
    sim = simulate(
        sk,
        POLICIES[policy],
        budget=MAX_TOKENS,
        hard_limit=MAX_TOKENS,
        count=ESTIMATOR.count,
        reconcile=rec,
        **extra,
    )
    return sk, rec, sim


@pytest.mark.parametrize("name", LOGS)
def test_as_logged_reconciled_is_what_the_provider_measured(corpus: Path, name: str):
    for run in parse_path(str(corpus / name)).runs:
        _, rec, sim = _replay(run)
        errors = sorted(abs(r.sent - r.measured) / r.measured for r in sim.records if r.measured)
        if not errors:
            continue
        assert rec is not None
        assert statistics.median(errors) <= 0.05, (run.title, errors)
        assert errors[int(0.9 * (len(errors) - 1))] <= 0.15, (run.title, errors)


def _requests_before_boundary(path: Path) -> list[int]:
    """Per compact_boundary line of the main session: how many distinct responses came
    before it (so the first request after it is that step)."""
    seen: set[str] = set()
    found = []
    for line in path.read_text().splitlines():
        data = json.loads(line)
        if data.get("isSidechain"):
            continue
        if data.get("type") == "assistant":
            seen.add(data["message"].get("id") or data.get("uuid"))
        elif data.get("subtype") == "compact_boundary":
            found.append(len(seen))
    return found


def test_the_log_compaction_is_applied_after_its_boundary(corpus: Path):
    path = corpus / "claude_code/codemie_session-624a4a58.jsonl"
    (after,) = _requests_before_boundary(path)
    (run,) = [r for r in parse_path(str(path)).runs if not r.subagent]
    sk, _, sim = _replay(run)
    (boundary,) = sk.compactions
    letters = sim.dispositions(after)
    assert set(letters[:boundary]) == {"s"} and set(letters[boundary:]) == {"k"}
    assert sim.records[after].stage == "summarize"
    assert set(sim.dispositions(after - 1)) == {"k"}
    # The request after the compaction is within the target of what was measured.
    first = sim.records[after]
    assert abs(first.sent - first.measured) / first.measured <= 0.15


@pytest.mark.parametrize(
    "name, compacted",
    [
        ("claude_code/codemie_session-624a4a58.jsonl", True),
        ("claude_code/codemie_session-196820da.jsonl", False),
        ("claude_code/ccviewer_fe5e1c67.jsonl", False),
        ("claude_code/ccviewer_5c0375b4.jsonl", False),
    ],
)
def test_claude_code_auto_compact_fires_where_the_real_one_did_and_only_there(
    corpus: Path, name: str, compacted: bool
):
    path = corpus / name
    real = _requests_before_boundary(path)
    assert bool(real) == compacted
    for run in parse_path(str(path)).runs:
        _, _, sim = _replay(run, "claude_code_auto_compact")
        first = next((r.step for r in sim.records if r.stage == "summarize"), None)
        if run.subagent or not compacted:
            assert first is None, run.title
        else:
            assert first is not None and abs(first - real[0]) <= 3


@pytest.mark.parametrize("name", LOGS[:5])
def test_as_logged_costs_what_the_logged_usage_costs_at_genai_prices(corpus: Path, name: str):
    for run in parse_path(str(corpus / name)).runs:
        sk, _, sim = _replay(run)
        usages = [m.usage for m in run.messages if m.usage is not None]
        if not usages:
            continue
        oracle = sum(
            float(
                calc_price(
                    PriceUsage(
                        input_tokens=u.input_tokens + u.cache_read + u.cache_write,
                        cache_read_tokens=u.cache_read,
                        cache_write_tokens=u.cache_write,
                        output_tokens=u.output_tokens,
                    ),
                    model_ref=run.model,
                ).total_price
            )
            for u in usages
        )
        facts = model_facts(run.model)
        assert facts is not None
        measured = run_measured_cost(run.model, sk.usage, facts.prices)
        assert measured == pytest.approx(oracle, abs=1e-6)  # rounded to a micro-dollar
        simulated = sum(r.cost for r in sim.records)
        assert simulated == pytest.approx(measured, rel=0.01)


@pytest.mark.parametrize("name", LOGS[:5])
def test_fitted_rates_and_their_constant_explain_what_was_sent(corpus: Path, name: str):
    from contextsim.counting.fitting import CustomEstimator, fit_rates, request_features

    run = max(parse_path(str(corpus / name)).runs, key=lambda r: len(r.messages))
    rates = fit_rates(run)
    # No absurd rate: ASCII letters cost something, and less than a token each.
    assert 0.05 < rates.per_char["ascii_alnum"] < 1.0
    assert rates.overhead > 0  # the unlogged part is found, not folded into the rates
    custom = CustomEstimator("custom-truth", rates)
    features, counts, measured = request_features(run)
    estimates = [
        sum(custom.rates[s] * n for s, n in f.items()) + 4 * c + rates.overhead
        for f, c in zip(features, counts, strict=True)
    ]
    errors = [abs(e - m) / m for e, m in zip(estimates, measured, strict=True)]
    assert statistics.median(errors) <= 0.15, errors


def _codex_calls_before_compactions(path: Path) -> list[int]:
    """Per `compacted` line of a rollout: how many model calls came before it, read
    from the usage events (each call's totals change once; a zero usage is the
    compaction's own bookkeeping), so the first request after it is that step."""
    calls, last, found = 0, None, []
    for line in path.read_text().splitlines():
        data = json.loads(line)
        payload = data.get("payload") or {}
        if data.get("type") == "compacted":
            found.append(calls)
        elif payload.get("type") == "token_count" and payload.get("info"):
            usage = payload["info"]["last_token_usage"]
            total = payload["info"]["total_token_usage"]
            if usage["input_tokens"] + usage["output_tokens"] and total != last:
                calls += 1
            last = total
    return found


@pytest.mark.parametrize("path", corpus_files("codex", "*rollout-*.jsonl"))
def test_codex_auto_compact_fires_where_the_real_one_did_and_only_there(path: Path):
    real = _codex_calls_before_compactions(path)
    (run,) = parse_path(str(path)).runs
    _, _, sim = _replay(run, "codex_auto_compact")
    first = next((r.step for r in sim.records if r.stage == "summarize"), None)
    if not real:
        assert first is None
    else:
        assert first is not None and abs(first - real[0]) <= 3, (first, real)
