"""Measured cost: each response at its own model's prices and cache tier, never at
another model's; the oracle is genai-prices, asked directly."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from contextsim.ingest.detect import parse_path
from contextsim.model import Usage
from contextsim.truth.costs import PRESETS, measured_cost
from contextsim.truth.prices import (
    assumed_prices,
    model_facts,
    response_cost,
    run_measured_cost,
    unpriced_models,
)
from tests.conftest import corpus_files


def oracle(model: str, u: Usage) -> float:
    return float(
        calc_price(
            PriceUsage(
                input_tokens=u.context,
                cache_read_tokens=u.cache_read,
                cache_write_tokens=u.cache_write,
                cache_write_1h_tokens=u.cache_write_1h,
                output_tokens=u.output_tokens,
            ),
            model_ref=model,
        ).total_price
    )


def test_a_one_hour_cache_write_costs_what_genai_prices_says_twice_the_input():
    u = Usage(10, 1_000, 100_000, 500, cache_write_1h=60_000)
    facts = model_facts("claude-sonnet-4-6")
    assert facts is not None
    cost = response_cost("claude-sonnet-4-6", u, facts.prices)
    assert cost == pytest.approx(oracle("claude-sonnet-4-6", u))
    five_minutes = response_cost("claude-sonnet-4-6", replace(u, cache_write_1h=0), facts.prices)
    assert cost - five_minutes == pytest.approx(60_000 * 3.0 * (2.0 - 1.25) / 1e6)
    # The flat prices bill it at 2x input too.
    assert measured_cost(facts.prices, u) == pytest.approx(cost)


def test_each_response_is_priced_at_the_model_that_answered_it():
    facts = model_facts("claude-sonnet-4-6")
    assert facts is not None
    haiku = Usage(1_000, output_tokens=100, model="claude-haiku-4-5")
    opus = Usage(1_000, output_tokens=100, model="claude-opus-4-6")
    total = run_measured_cost("claude-sonnet-4-6", [haiku, opus, None], facts.prices)
    expected = oracle("claude-haiku-4-5", haiku) + oracle("claude-opus-4-6", opus)
    assert total == pytest.approx(expected, abs=1e-6)


def test_a_model_genai_prices_does_not_know_gets_no_price_and_is_named():
    facts = model_facts("claude-sonnet-4-6")
    assert facts is not None
    mystery = Usage(1_000, output_tokens=100, model="mystery-model-9")
    known = Usage(1_000, output_tokens=100)
    assert response_cost("claude-sonnet-4-6", mystery, facts.prices) is None
    assert unpriced_models("claude-sonnet-4-6", [known, mystery], facts.prices) == [
        "mystery-model-9"
    ]
    assert run_measured_cost("claude-sonnet-4-6", [known, mystery], facts.prices) == round(
        oracle("claude-sonnet-4-6", known), 6
    )
    # A run of an unknown model: the preset stands in, and its label says so.
    stand_in = assumed_prices("mystery-model-9", PRESETS["anthropic"])
    assert stand_in.label.startswith("prices unknown for mystery-model-9")
    # Prices the person names price every response, whatever model answered.
    named = replace(PRESETS["openai"], named=True)
    assert response_cost("claude-sonnet-4-6", mystery, named) == measured_cost(named, mystery)


def _independent_cost(path: Path) -> float:
    """The last line of each response id, each at its own model, from the raw file."""
    last: dict[str, tuple[str, dict[str, object]]] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        message = record.get("message")
        answered = record.get("type") == "assistant" and isinstance(message, dict)
        if answered and message.get("usage") and message.get("model") != "<synthetic>":
            last[message["id"]] = (message["model"], message["usage"])
    total = 0.0
    for model, u in last.values():
        tiers = u.get("cache_creation") or {}
        written = u.get("cache_creation_input_tokens") or 0
        read = u.get("cache_read_input_tokens") or 0
        total += float(
            calc_price(
                PriceUsage(
                    input_tokens=(u.get("input_tokens") or 0) + read + written,
                    cache_read_tokens=read,
                    cache_write_tokens=written,
                    cache_write_1h_tokens=tiers.get("ephemeral_1h_input_tokens") or 0,
                    output_tokens=u.get("output_tokens") or 0,
                ),
                model_ref=model,
            ).total_price
        )
    return total


@pytest.mark.parametrize("path", corpus_files("claude_code", "*.jsonl"))
def test_a_claude_code_sessions_measured_cost_is_its_usage_priced_independently(path: Path):
    parsed = parse_path(str(path))
    ours = 0.0
    for run in parsed.runs:
        facts = model_facts(run.model)
        assert facts is not None
        ours += run_measured_cost(run.model, [m.usage for m in run.messages], facts.prices) or 0
    assert ours == pytest.approx(_independent_cost(path), rel=1e-4)
