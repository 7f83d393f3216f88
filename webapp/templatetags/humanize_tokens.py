"""Template filters for token figures."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def tokens(value: int | None) -> str:
    """12345 -> '12,345'; None -> an en dash."""
    if value is None or value == "":
        return "\u2013"
    return f"{int(value):,}"


@register.filter
def get(mapping: dict[str, Any], key: str) -> Any:
    return mapping.get(key)


@register.filter
def delta(estimate: int, measured: int) -> str:
    """Signed difference with its share of the measured figure: '-1,234 (-5.0%)'."""
    diff = estimate - measured
    share = f" ({diff / measured:+.1%})" if measured else ""
    return f"{diff:+,}{share}"
