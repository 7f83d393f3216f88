"""Prompt-cache pricing: editable presets per provider, and the cost of one request.

Providers bill cached input differently. Anthropic reports input, cache reads and
cache writes separately and charges a premium to write; OpenAI reports cached tokens
inside the prompt tokens and charges nothing extra to write. Usage is normalized by the
importers (input excludes cached tokens), so one formula serves both.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextsim.model import Usage


@dataclass(frozen=True, slots=True)
class Prices:
    """US dollars per million tokens, and cache multipliers of the input price."""

    label: str
    input: float
    output: float
    cache_read: float
    cache_write: float
    writes_cache: bool
    """Whether new input is written to the cache (billed at `cache_write`)."""
    model: str = ""
    """The model these are the prices of (contextsim.truth.prices), "" for a preset."""
    named: bool = False
    """Named by the person (a preset or prices they chose): every response is priced
    at them, whatever model answered it."""


PRESETS: dict[str, Prices] = {
    "anthropic": Prices("Anthropic (Claude Sonnet 4.5)", 3.0, 15.0, 0.1, 1.25, True),
    "openai": Prices("OpenAI (GPT-5)", 1.25, 10.0, 0.1, 1.0, False),
}


def per_token(prices: Prices) -> tuple[float, float, float]:
    """Dollars per token for (new input, input read from the cache, output)."""
    write = prices.cache_write if prices.writes_cache else 1.0
    return (
        prices.input * write / 1_000_000,
        prices.input * prices.cache_read / 1_000_000,
        prices.output / 1_000_000,
    )


HOUR_WRITE = 2.0
"""Anthropic bills a write to the 1-hour cache at 2x the input price (a 5-minute one at
1.25x, the presets' cache_write)."""


def measured_cost(prices: Prices, usage: Usage) -> float:
    """Dollars for a request as the provider measured it (1-hour cache writes at
    HOUR_WRITE x input where the prices bill writes)."""
    hour = usage.cache_write_1h if prices.writes_cache else 0
    return (
        usage.input_tokens * prices.input
        + usage.cache_read * prices.input * prices.cache_read
        + (usage.cache_write - hour) * prices.input * prices.cache_write
        + hour * prices.input * HOUR_WRITE
        + usage.output_tokens * prices.output
    ) / 1_000_000
