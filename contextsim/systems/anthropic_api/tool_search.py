"""Deferring tools, as the real systems configure it: the Messages API's tool search
(`defer_loading: true` on each deferred tool, the search tool added to `tools`, and for
the MCP connector an `mcp_toolset` whose `default_config` defers its server's tools),
and Claude Code's own MCP tool search (`ENABLE_TOOL_SEARCH`).

Sources: Anthropic documentation, "Tool search tool" (agents-and-tools/tool-use/
tool-search-tool: tool versions tool_search_tool_regex_20251119 and
tool_search_tool_bm25_20251119; the beta header advanced-tool-use-2025-11-20 at launch)
and "Tool use with prompt caching" (deferred tools stay out of the cached prefix);
Claude Code 2.1.7's release, which made MCP tool search the default once MCP tool
definitions pass 10% of the window.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from contextsim.engine.deferral import SEARCH_TOOL
from contextsim.systems.exporting import Snippet

SEARCH_TOOL_TYPE = "tool_search_tool_regex_20251119"
LAUNCH_BETA = "advanced-tool-use-2025-11-20"


def tool_search_snippets(
    patterns: Sequence[str], names: Sequence[str], removed: Sequence[str] = ()
) -> tuple[Snippet, ...]:
    """The configuration that defers the tools `names` (chosen by `patterns`:
    contextsim.engine.deferral) with Anthropic's tool search, and leaves out the tools
    `removed`."""
    out = [_removal(sorted(set(removed)))] if removed else []
    if not names:
        return tuple(out)

    chosen = sorted(set(names))
    servers = sorted(
        {p[5:].split("__", 1)[0] for p in patterns if p.startswith("mcp__") and p.endswith("__*")}
    )
    python = (
        f"DEFERRED = {json.dumps(chosen, indent=4)}\n"
        "# `tools` is the list the agent sends today: mark the deferred ones and add the\n"
        "# search tool (never deferred itself).\n"
        'tools = [{**t, "defer_loading": True} if t["name"] in DEFERRED else t for t in tools]\n'
        f'tools.append({{"type": "{SEARCH_TOOL_TYPE}", "name": "{SEARCH_TOOL}"}})\n'
    )
    notes = [
        "A deferred tool's definition is loaded inline, where the search finds it; the "
        "tools' prefix and its cache stay as they are.",
        f"At launch the tool search tool needed the header anthropic-beta: {LAUNCH_BETA}; "
        "check that your model supports tool search.",
        "The simulation loads a deferred tool where it was first called in the log: a "
        "search that finds other tools too would load more.",
    ]
    out += [
        Snippet(
            "anthropic-tool-search",
            "Messages API tools with tool search (Python)",
            "python",
            python,
            tuple(notes),
        )
    ]
    if servers:
        toolsets = [
            {
                "type": "mcp_toolset",
                "mcp_server_name": server,
                "default_config": {"defer_loading": True},
            }
            for server in servers
        ]
        out.append(
            Snippet(
                "anthropic-mcp-toolset",
                "MCP connector: defer a server's tools (JSON, in `tools`)",
                "json",
                json.dumps(toolsets, indent=2),
                (
                    "With the API's MCP connector, a toolset's default_config defers every tool "
                    "of its server; add the search tool as above.",
                ),
            )
        )
        out.append(
            Snippet(
                "claude-code-tool-search",
                "Claude Code (environment)",
                "sh",
                "export ENABLE_TOOL_SEARCH=true\n",
                (
                    "Claude Code defers MCP tools itself (since 2.1.7, by default once their "
                    "definitions pass 10% of the window); true defers every MCP server's "
                    "tools, not a chosen few.",
                ),
            )
        )
    return tuple(out)


def _removal(removed: list[str]) -> Snippet:
    python = (
        f"REMOVED = {json.dumps(removed, indent=4)}\n"
        "# Never called in the run: not offered at all.\n"
        'tools = [t for t in tools if t["name"] not in REMOVED]\n'
    )
    note = (
        "A removed tool cannot be called: the run never called these, another task may. "
        "In Claude Code, leave the MCP server out (claude mcp remove)."
    )
    return Snippet(
        "anthropic-tool-list",
        "Messages API tools, without these (Python)",
        "python",
        python,
        (note,),
    )
