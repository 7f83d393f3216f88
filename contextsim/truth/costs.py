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


def measured_cost(prices: Prices, usage: Usage) -> float:
    """Dollars for a request as the provider measured it."""
    return (
        usage.input_tokens * prices.input
        + usage.cache_read * prices.input * prices.cache_read
        + usage.cache_write * prices.input * prices.cache_write
        + usage.output_tokens * prices.output
    ) / 1_000_000
