"""Claude Code, Anthropic's coding agent: its session JSONL
(`~/.claude/projects/<project>/<session>.jsonl` and `subagents/`), its auto-compact and
microcompaction, and the settings that control them."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="Claude Code",
    importers=("format:ClaudeCodeImporter",),
    policies=("policies:ClaudeCodePolicy", "microcompact:MicrocompactPolicy"),
    exports="export:EXPORTS",
    mechanisms="tuning:MECHANISMS",
    uses_api="anthropic",
)
