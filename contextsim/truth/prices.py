"""Models' prices and context windows, from genai-prices (a maintained library of model
prices; its bundled data is used as it is, offline, never updated at run time).

Units: dollars; context windows in tokens. A model genai-prices does not know gives
None: callers say so and fall back to a visible default.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache

from contextsim.model import Run, Usage
from contextsim.truth.costs import PRESETS, Prices, measured_cost

PROVIDER_PRESET = {"anthropic": "anthropic", "aws": "anthropic", "google": "openai"}
"""Which cache convention a provider follows (Anthropic bills cache writes; OpenAI-style
providers write the cache for free)."""


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What genai-prices knows of one model: its id, provider, context window (tokens,
    None when unknown) and flat prices (the base tier)."""

    model: str
    provider: str
    context_window: int | None
    prices: Prices
    tiers_from: int | None = None
    """Input tokens from which a request is priced otherwise than `prices` say (long-
    context tiers; 0: conditional prices, always asked of genai-prices)."""


@cache
def model_facts(model: str) -> ModelFacts | None:
    """The facts of `model` as a log names it (e.g. ``claude-sonnet-4-5-20250929``,
    ``gpt-5.3-codex``, a Bedrock id), or None when genai-prices does not know it."""
    if not model:
        return None
    # Imported on first use: it takes a fifth of a second (its pydantic models), which
    # an import of a big log, never asking it, paid before showing the run.
    from genai_prices import data_snapshot

    try:
        provider, info = data_snapshot.get_snapshot().find_provider_model(model, None, None, None)
        # Per million tokens, from a request small enough to stay in the base tier.
        base = {
            name: _price(model, **{name: 1_000}) * 1_000
            for name in ("input", "output", "cache_read", "cache_write")
        }
    except (LookupError, ValueError, TypeError, AttributeError):
        return None
    preset = PRESETS[PROVIDER_PRESET.get(provider.id, "openai")]
    writes = preset.writes_cache and base["cache_write"] > 0
    new = base["input"] or 1e-12  # multipliers below are of the input price
    prices = Prices(
        label=f"{info.name or info.id} ({provider.name}, genai-prices)",
        input=base["input"],
        output=base["output"],
        cache_read=base["cache_read"] / new if base["cache_read"] else preset.cache_read,
        cache_write=base["cache_write"] / new if writes else 1.0,
        writes_cache=writes,
        model=model,
    )
    return ModelFacts(info.id, provider.id, info.context_window, prices, _tiers_from(info))


def _tiers_from(info: object) -> int | None:
    found = getattr(info, "prices", None)
    if isinstance(found, list):
        return 0
    starts = [
        tier.start
        for name in ("input_mtok", "cache_read_mtok", "cache_write_mtok", "output_mtok")
        for tier in getattr(getattr(found, name, None), "tiers", None) or ()
    ]
    return min(starts) if starts else None


def _price(
    model: str,
    input: int = 0,
    output: int = 0,
    cache_read: int = 0,
    cache_write: int = 0,
    cache_write_1h: int = 0,
) -> float:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    usage = PriceUsage(
        input_tokens=input + cache_read + cache_write,
        cache_read_tokens=cache_read or None,
        cache_write_tokens=cache_write or None,
        cache_write_1h_tokens=cache_write_1h or None,
        output_tokens=output,
    )
    return float(calc_price(usage, model_ref=model).total_price)


def usage_cost(model: str, usage: Usage) -> float | None:
    """Dollars genai-prices charges for one request's measured usage, at the model that
    answered it (`usage.model`, else `model`), its tiers and its 1-hour cache writes
    applied; None for a model it does not know."""
    model = usage.model or model
    facts = model_facts(model)
    if facts is None:
        return None
    flat = facts.tiers_from is None or usage.context < facts.tiers_from
    if flat and not usage.cache_write_1h:
        return measured_cost(facts.prices, usage)  # the base tier: no need to ask
    return _price(
        model,
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read,
        usage.cache_write,
        usage.cache_write_1h,
    )


def response_cost(model: str, usage: Usage, prices: Prices) -> float | None:
    """Dollars of one measured response of a run of `model` priced at `prices`: the
    prices the person named, if so; else genai-prices' figure for the model that
    answered it (usage.model, else `model`); else `prices` when they stand for that
    model (the run's model, or none named); else None: a model genai-prices does not
    know is never priced as another."""
    answered = usage.model or model
    if not prices.named and answered:
        cost = usage_cost(answered, usage)
        if cost is not None:
            return cost
        if answered != model:
            return None
    return measured_cost(prices, usage)


def unpriced_models(model: str, usages: Iterable[Usage | None], prices: Prices) -> list[str]:
    """The models that answered some of these responses and have no price: genai-prices
    does not know them and `prices` are another model's. In order of first answer."""
    out: list[str] = []
    if prices.named:
        return out
    for usage in usages:
        # response_cost's None, without pricing the response again.
        answered = usage.model if usage is not None else ""
        fresh = answered and answered != model and answered not in out
        if fresh and model_facts(answered) is None:
            out.append(answered)
    return out


DEFAULT_HARD_LIMIT = 1_000_000
"""The hard limit of a run whose model's window is unknown (said in a warning)."""
DEFAULT_BUDGET = 400_000
"""Our own per-request limit where nothing else decides it (the seed system's)."""


def assumed_prices(model: str, preset: Prices) -> Prices:
    """`preset` standing in for `model`'s prices, which genai-prices does not know: its
    label says so, wherever the prices are shown."""
    if not model:
        return preset
    return replace(preset, label=f"prices unknown for {model}: {preset.label} assumed")


def default_limits(model: str, context_window: int | None) -> tuple[int, int, bool]:
    """(hard limit, budget, whether the window is known) in tokens per request for a
    run of `model` whose log states `context_window` (or None): the hard limit is the
    stated window, else the model's from genai-prices, else DEFAULT_HARD_LIMIT; the
    budget is DEFAULT_BUDGET, never above the hard limit."""
    facts = model_facts(model)
    window = context_window or (facts.context_window if facts else None)
    hard_limit = window or DEFAULT_HARD_LIMIT
    return hard_limit, min(DEFAULT_BUDGET, hard_limit), window is not None


def window_source(model: str, context_window: int | None, said: str = "") -> str:
    """Where a run's default hard limit comes from, for a person: `said` (the run's
    Run.window_source), the log, genai-prices, or the assumed DEFAULT_HARD_LIMIT."""
    if context_window:
        return said or "stated in the log"
    facts = model_facts(model)
    if facts is not None and facts.context_window:
        return f"genai-prices' window for {facts.model}"
    return f"assumed: the log names no window and genai-prices knows no {model or 'model'}"


def run_limits(run: Run, hard_limit: int | None, budget: int | None) -> tuple[int, int, str]:
    """(hard limit, budget, what to tell the person) for `run`: as given, else its
    default_limits, with a warning when the window is unknown."""
    default_hard, _, known = default_limits(run.model, run.context_window)
    said = ""
    if hard_limit is None and not known:
        model = f"model {run.model!r}" if run.model else "no model named in the log"
        said = f"{model}: window unknown, hard limit {DEFAULT_HARD_LIMIT:,} assumed"
    hard_limit = hard_limit if hard_limit is not None else default_hard
    budget = budget if budget is not None else min(DEFAULT_BUDGET, hard_limit)
    return hard_limit, budget, said


def run_measured_cost(model: str, usages: Iterable[Usage | None], prices: Prices) -> float | None:
    """Dollars the logged usage cost, each response at its own model's prices
    (response_cost); None when the log measured nothing. Responses with no price
    (unpriced_models) add nothing: say so beside the figure."""
    found = [u for u in usages if u is not None]
    if not found:
        return None
    return round(sum(filter(None, (response_cost(model, u, prices) for u in found))), 6)
