"""Codex CLI, OpenAI's coding agent: its rollout JSONL
(`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), its auto-compaction and the
config.toml keys that control it."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="Codex CLI",
    importers=("format:CodexImporter",),
    policies=("policies:CodexPolicy",),
    exports="export:EXPORTS",
    provider="openai",
    mechanisms="tuning:MECHANISMS",
)
