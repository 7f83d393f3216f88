"""Tools whose definitions are deferred: Anthropic's tool search (`defer_loading`).

A deferred tool's definition is not in the request's tool list. The tool search tool
takes the place of the deferred ones (its own definition is sent instead); when the
model searches and finds a tool, the API appends the tool's full definition inline in
the conversation, as a `tool_reference` in the search's result, and the cached prefix
is untouched (platform.claude.com, "Tool use with prompt caching"). The search runs on
the server within the response that then calls the tool.

So, on a skeleton whose log holds the definitions (Skeleton.definitions, a capture's):
each message of tool definitions loses the deferred ones' tokens and gains the search
tool's; each deferred tool's definition is added to the assistant message that first
calls it, and again to the first call after each logged compaction (the summary does
not keep it). The result is a skeleton like any other: every policy, the accounting
of cache and cost, and the pages work on it unchanged.

What is not modelled: the few tokens of the search's own query and result blocks, and
the search's server-side turn within the response (the API bills it as more input).

Units: tokens of the skeleton's estimator.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, replace

from contextsim.counting.memory import per_skeleton
from contextsim.counting.skeleton import Skeleton

SEARCH_TOOL = "tool_search_tool_regex"
"""The name of the tool that takes the deferred tools' place (Anthropic's regex
variant; the BM25 one is the same for this purpose)."""
SEARCH_TOOL_TOKENS = 500
SEARCH_TOOL_SOURCE = (
    "Anthropic's engineering post on advanced tool use: the tool search tool itself is "
    "about 500 tokens"
)
MAX_PATTERNS = 200
"""Patterns one deferral may name: a bound on what a query string can ask for."""


@dataclass(frozen=True, slots=True)
class Deferral:
    """Which tools are deferred: `patterns` are tool names, or a prefix ending in "*"
    (``mcp__github__*``: one MCP server's tools; ``*``: every tool). `search_tokens` is
    the tool search tool's definition, in tokens."""

    patterns: tuple[str, ...]
    search_tokens: int = SEARCH_TOOL_TOKENS

    def matches(self, name: str) -> bool:
        """Whether the tool `name` is deferred (the search tool never is)."""
        if name == SEARCH_TOOL:
            return False
        return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in self.patterns)


def parse_deferral(text: str, search_tokens: int = SEARCH_TOOL_TOKENS) -> Deferral | None:
    """The deferral a comma-separated list of names or patterns says; None for an empty
    one. Raises ValueError naming a bad pattern (a "*" anywhere but at its end) or too
    many of them."""
    patterns = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not patterns:
        return None
    if len(patterns) > MAX_PATTERNS:
        raise ValueError(f"defer: at most {MAX_PATTERNS} tools or patterns, got {len(patterns)}")
    for p in patterns:
        if "*" in p[:-1]:
            raise ValueError(f"defer: {p!r}: a '*' may only end a pattern (mcp__server__*)")
    if search_tokens < 0:
        raise ValueError("defer: the search tool's tokens cannot be negative")
    return Deferral(patterns, search_tokens)


def defined_tools(sk: Skeleton) -> dict[str, int]:
    """Each tool the log defines and its definition's tokens (the largest where it is
    defined more than once), in the order first defined."""
    sizes: dict[str, int] = {}
    for _, name, tokens in sk.definitions:
        sizes[name] = max(sizes.get(name, 0), tokens)
    return sizes


def deferred_names(sk: Skeleton, deferral: Deferral) -> list[str]:
    """The tools of the log the deferral defers. Raises ValueError when the log holds
    no definitions, or when a pattern matches none of them (naming it and what is
    defined)."""
    defined = defined_tools(sk)
    if not defined:
        raise ValueError(
            "defer: this log holds no tool definitions (a capture of the requests has "
            "them), so there is nothing to defer"
        )
    for p in deferral.patterns:
        if not any(Deferral((p,)).matches(name) for name in defined):
            shown = ", ".join(list(defined)[:12]) + (", ..." if len(defined) > 12 else "")
            raise ValueError(f"defer: {p!r} matches no tool this log defines ({shown})")
    return [name for name in defined if deferral.matches(name)]


def deferred(sk: Skeleton, deferral: Deferral) -> Skeleton:
    """The skeleton as it would be with `deferral`'s tools deferred (see the module).
    Kept while `sk` lives, per deferral. Raises ValueError as deferred_names."""
    names = set(deferred_names(sk, deferral))
    return per_skeleton(sk, ("deferred", deferral), lambda: _build(sk, deferral, names))


def _build(sk: Skeleton, deferral: Deferral, names: set[str]) -> Skeleton:
    tokens = list(sk.tokens)
    kept: list[tuple[int, str, int]] = []
    removed: dict[int, int] = {}
    for i, name, size in sk.definitions:
        if name in names:
            removed[i] = removed.get(i, 0) + size
        else:
            kept.append((i, name, size))
    for i, size in removed.items():
        tokens[i] += deferral.search_tokens - size
        kept.append((i, SEARCH_TOOL, deferral.search_tokens))
    sizes = defined_tools(sk)
    for j, name in loads(sk, names):
        tokens[j] += sizes[name]
    return replace(sk, tokens=tuple(tokens), definitions=tuple(sorted(kept)))


def loads(sk: Skeleton, names: set[str]) -> Iterable[tuple[int, str]]:
    """(message, tool) of each deferred tool's first call, and its first call after each
    logged compaction."""
    marks = sorted(set(sk.compactions))
    seen: set[tuple[int, str]] = set()
    for j, called in enumerate(sk.call_names or ()):
        stretch = bisect.bisect_right(marks, j)
        for name in called:
            if name in names and (stretch, name) not in seen:
                seen.add((stretch, name))
                yield j, name
