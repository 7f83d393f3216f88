"""claude-trace and proxies of its layout: captures of the exact requests an agent sent
(Claude Code, opencode, Codex) and the responses it got."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="claude-trace capture",
    importers=("format:ClaudeTraceImporter",),
)
