"""Policy parameters as the command line takes them: `--set key=value`, repeatable."""

from __future__ import annotations

from collections.abc import Iterable

from contextsim.ingest.base import FormatError


def set_values(items: Iterable[str]) -> dict[str, str]:
    """The `--set key=value` items as {key: value} (a later key wins), both stripped.
    Raises FormatError naming `--set` for an item without '='."""
    values: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise FormatError("--set", "", f"expected key=value, got {item!r}")
        values[key.strip()] = value.strip()
    return values
