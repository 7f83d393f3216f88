"""Tools whose definitions are deferred (Anthropic's tool search, `defer_loading`) or
removed from the request's tool list.

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

A removed tool is simply not in the list (no search tool, nothing loaded); only a tool
the log never calls can be removed without changing what the agent did.

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


def _matches(patterns: tuple[str, ...], name: str) -> bool:
    return name != SEARCH_TOOL and any(
        name.startswith(p[:-1]) if p.endswith("*") else name == p for p in patterns
    )


@dataclass(frozen=True, slots=True)
class Deferral:
    """Which tools are deferred and which are removed. Patterns are tool names, or a
    prefix ending in "*" (``mcp__github__*``: one MCP server's tools; ``*``: every tool).
    A deferred tool (`patterns`) is loaded where it is called; a removed one (`removed`)
    is not offered at all, so it may only be a tool the log never calls. `search_tokens`
    is the tool search tool's definition, in tokens. The search tool itself is neither."""

    patterns: tuple[str, ...] = ()
    search_tokens: int = SEARCH_TOOL_TOKENS
    removed: tuple[str, ...] = ()

    def matches(self, name: str) -> bool:
        """Whether the tool `name` is deferred (a removed tool is not)."""
        return _matches(self.patterns, name) and not self.drops(name)

    def drops(self, name: str) -> bool:
        """Whether the tool `name` is removed."""
        return _matches(self.removed, name)


def _patterns(option: str, text: str) -> tuple[str, ...]:
    patterns = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if len(patterns) > MAX_PATTERNS:
        raise ValueError(f"{option}: at most {MAX_PATTERNS} tools or patterns, got {len(patterns)}")
    for p in patterns:
        if "*" in p[:-1]:
            raise ValueError(f"{option}: {p!r}: a '*' may only end a pattern (mcp__server__*)")
    return patterns


def parse_deferral(
    text: str, search_tokens: int = SEARCH_TOOL_TOKENS, removed: str = ""
) -> Deferral | None:
    """The deferral comma-separated lists of names or patterns say (`text`: the tools
    deferred, `removed`: those removed); None when both are empty. Raises ValueError,
    naming the list ("defer" or "remove"), for a bad pattern (a "*" anywhere but at its
    end) or too many of them."""
    patterns, dropped = _patterns("defer", text), _patterns("remove", removed)
    if not patterns and not dropped:
        return None
    if search_tokens < 0:
        raise ValueError("defer: the search tool's tokens cannot be negative")
    return Deferral(patterns, search_tokens, dropped)


def defined_tools(sk: Skeleton) -> dict[str, int]:
    """Each tool the log defines and its definition's tokens (the largest where it is
    defined more than once), in the order first defined."""
    sizes: dict[str, int] = {}
    for _, name, tokens in sk.definitions:
        sizes[name] = max(sizes.get(name, 0), tokens)
    return sizes


def _chosen(sk: Skeleton, option: str, patterns: tuple[str, ...]) -> list[str]:
    defined = defined_tools(sk)
    if patterns and not defined:
        raise ValueError(
            f"{option}: this log holds no tool definitions (a capture of the requests has "
            "them), so there is nothing to " + option
        )
    for p in patterns:
        if not any(_matches((p,), name) for name in defined):
            shown = ", ".join(list(defined)[:12]) + (", ..." if len(defined) > 12 else "")
            raise ValueError(f"{option}: {p!r} matches no tool this log defines ({shown})")
    return [name for name in defined if _matches(patterns, name)]


def deferred_names(sk: Skeleton, deferral: Deferral) -> list[str]:
    """The tools of the log the deferral defers. Raises ValueError, naming the list,
    when the log holds no definitions, when a pattern matches none of them (naming it
    and what is defined), or when a removed tool is called (naming the step)."""
    removed = removed_names(sk, deferral)
    return [n for n in _chosen(sk, "defer", deferral.patterns) if n not in removed]


def removed_names(sk: Skeleton, deferral: Deferral) -> list[str]:
    """The tools of the log the deferral removes (ValueError as deferred_names)."""
    names = _chosen(sk, "remove", deferral.removed)
    if names:
        chosen = set(names)
        for j, called in enumerate(sk.call_names or ()):
            found = chosen.intersection(called)
            if found:
                step = bisect.bisect_left(sk.ends, j)  # the request that answered with it
                raise ValueError(
                    f"remove: {sorted(found)[0]} is called at step {step}: removing it "
                    "changes what the agent did; defer it instead"
                )
    return names


def deferred(sk: Skeleton, deferral: Deferral) -> Skeleton:
    """The skeleton as it would be with `deferral`'s tools deferred and removed (see the
    module). Kept while `sk` lives, per deferral. Raises ValueError as deferred_names."""
    names = set(deferred_names(sk, deferral))
    dropped = set(removed_names(sk, deferral))
    return per_skeleton(sk, ("deferred", deferral), lambda: _build(sk, deferral, names, dropped))


def _build(sk: Skeleton, deferral: Deferral, names: set[str], dropped: set[str]) -> Skeleton:
    tokens = list(sk.tokens)
    kept: list[tuple[int, str, int]] = []
    searched: set[int] = set()  # messages whose list gains the search tool
    for i, name, size in sk.definitions:
        if name in names or name in dropped:
            tokens[i] -= size
            if name in names:
                searched.add(i)
        else:
            kept.append((i, name, size))
    for i in searched:
        tokens[i] += deferral.search_tokens
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
