"""Template filters for token figures."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from contextsim.truth.prices import model_facts

register = template.Library()


@register.filter
def tokens(value: int | str | None) -> str:
    """12345 -> '12,345'; None (or "", a template's missing value) -> an en dash."""
    if value is None or value == "":
        return "\u2013"
    return f"{int(value):,}"


@register.filter
def dollars(value: float | None) -> str:
    """Dollars to the cent, or to a hundredth of a cent under a cent (a saving on a
    cheap model is not $0.00): 12.3456 -> '$12.35', 0.00123 -> '$0.0012'; the sign
    left out (the text says more or less)."""
    if value is None:
        return "\u2013"
    amount = abs(value)
    return f"${amount:,.4f}" if 0 < amount < 0.01 else f"${amount:,.2f}"


@register.filter
def get(mapping: dict[str, Any], key: str) -> Any:
    return mapping.get(key)


@register.filter
def error_share(estimate: int, measured: int) -> str:
    """The estimate's signed error as a share of the measured figure: '-42.1%'."""
    if not measured:
        return ""
    return f"{(estimate - measured) / measured:+.1%}"


@register.filter
def share(part: int, whole: int) -> str:
    """part / whole as a percentage: '42%'."""
    return f"{part / whole:.0%}" if whole else "\u2013"


NAMES = {"k": "kept", "c": "cleared", "t": "truncated", "s": "summarized", "o": "offloaded"}


@register.filter
def disposition_name(letter: str) -> str:
    return NAMES.get(letter, letter)


@register.filter
def json_data(value: Any, element_id: str) -> SafeString:
    """Like json_script, for large figures: compact JSON, and <, > and & escaped with
    three replace calls instead of a per-character translate (so message text inside
    a figure can never close the script element)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    text = text.replace("<", "\\u003C").replace(">", "\\u003E").replace("&", "\\u0026")
    return format_html(
        '<script id="{}" type="application/json">{}</script>', element_id, mark_safe(text)
    )


SCRIPT_NAMES = {
    "ascii_alnum": "ASCII letters and digits",
    "ascii_other": "ASCII punctuation and spaces",
    "latin_accented": "accented Latin",
    "indic": "Devanagari and other Indic",
    "han": "Han (Chinese characters)",
    "kana": "kana",
    "other": "other symbols",
    "total": "all",
}


@register.filter
def script_name(script: str) -> str:
    return SCRIPT_NAMES.get(script, script.replace("_", " ").capitalize())


@register.filter
def percent(value: float | None) -> str:
    """0.123 -> '+12.3%'."""
    return "" if value is None else f"{value:+.1%}"


@register.filter
def percent_plain(value: float | None) -> str:
    """0.123 -> '12.3%'."""
    return "" if value is None else f"{value:.1%}"


@register.filter
def window(run: Any) -> int | None:
    """The run's context window (tokens): the one its log states, else its model's
    (genai-prices), else None."""
    if run.context_window:
        return int(run.context_window)
    facts = model_facts(run.model)
    return facts.context_window if facts is not None else None
