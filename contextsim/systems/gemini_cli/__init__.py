"""Gemini CLI, Google's coding agent: its chat recordings
(`~/.gemini/tmp/<project hash>/chats/session-*.json` or `.jsonl`)."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="Gemini CLI",
    importers=("format:GeminiCliImporter",),
    provider="openai",
)
