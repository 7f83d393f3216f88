"""Claude Code's MCP tool search as a searched setting: `ENABLE_TOOL_SEARCH`.

Claude Code defers its MCP tools' definitions (Anthropic's tool search: a deferred
tool's definition is loaded when the model searches for it) according to
ENABLE_TOOL_SEARCH: `true` always, `false` never, `auto` (the default since 2.1.7)
once the MCP tools' definitions pass 10% of the context window, `auto:N` once they pass
N%. Every MCP tool is deferred or none is; the built-in tools never are.

Only a log that holds the requests' tool definitions (a capture: `contextsim run --
claude`) can show what it saves: a session's JSONL does not record them, and then
every setting sends what was logged.

Sources: Claude Code 2.1.7's release (tool search on by default at 10%), Claude Code's
MCP documentation (ENABLE_TOOL_SEARCH values). The share is counted with the run's
estimator, standing in for Claude Code's own count; "pass" is taken as "exceed".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextsim.counting.skeleton import Skeleton
from contextsim.engine.deferral import Deferral, defined_tools
from contextsim.systems.exporting import Snippet

SETTING = "enable_tool_search"
"""The searched parameter's name."""
VALUES = ("true", "auto:5", "auto:20", "false", "auto")
"""What is tried. Of settings that do the same, the last is recommended: `auto`,
Claude Code's default, then `false`."""
DEFAULT_SHARE = 10
"""Percent of the window `auto` defers at."""
MCP_PREFIX = "mcp__"


def mcp_tokens(sk: Skeleton) -> int:
    """Tokens of the MCP tools' definitions the log holds (0 when it holds none)."""
    return sum(t for name, t in defined_tools(sk).items() if name.startswith(MCP_PREFIX))


def share_of(setting: str) -> int | None:
    """The percent of the window an `auto` setting defers at; None for true/false.
    Raises ValueError for anything else, naming it."""
    if setting in ("true", "false"):
        return None
    head, colon, share = setting.partition(":")
    if head != "auto" or (colon and not share.isdigit()):
        raise ValueError(f"{SETTING}: expected true, false, auto or auto:N, got {setting!r}")
    return int(share) if share else DEFAULT_SHARE


def deferral(values: Mapping[str, Any], sk: Skeleton, window: int) -> Deferral | None:
    """What ENABLE_TOOL_SEARCH=`values[SETTING]` defers on this run of a `window`-token
    model: every MCP tool, or nothing (None; also for a log without MCP definitions)."""
    setting = str(values[SETTING])
    share = share_of(setting)
    tokens = mcp_tokens(sk)
    if not tokens or setting == "false":
        return None
    if share is not None and tokens * 100 <= share * window:
        return None
    return Deferral((MCP_PREFIX + "*",))


def configure(values: Mapping[str, Any]) -> tuple[Snippet, ...]:
    """The setting as Claude Code reads it: the environment, or settings.json's env."""
    setting = str(values[SETTING])
    share = share_of(setting)
    what = {
        "true": "defers every MCP tool's definition from the first request",
        "false": "never defers: every MCP tool's definition is in every request",
    }.get(setting, f"defers every MCP tool once their definitions pass {share}% of the window")
    notes = (
        f"ENABLE_TOOL_SEARCH={setting} {what}.",
        "A deferred tool's definition is loaded where the model searches for it; the "
        "simulation loads it where the log first calls it.",
    )
    return (
        Snippet(
            "claude-code-tool-search",
            "Claude Code (environment)",
            "sh",
            f"export ENABLE_TOOL_SEARCH={setting}\n",
            notes,
        ),
        Snippet(
            "claude-code-settings",
            "Claude Code settings.json",
            "json",
            '{\n  "env": {\n    "ENABLE_TOOL_SEARCH": "' + setting + '"\n  }\n}\n',
            ("In ~/.claude/settings.json (every project) or .claude/settings.json.",),
        ),
    )
