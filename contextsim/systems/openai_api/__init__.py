"""OpenAI's APIs: Chat Completions logs, Responses API bodies (as the capture
proxy records them), the Responses API's truncation and compaction, and the OpenAI
Agents SDK's tool-output trimmer."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="OpenAI API and Agents SDK",
    importers=("format:OpenAIImporter",),
    policies=(
        "policies:TruncationPolicy",
        "policies:CompactionPolicy",
        "policies:TrimmerPolicy",
    ),
    exports="export:EXPORTS",
    provider="openai",
    mechanisms="tuning:MECHANISMS",
    api_of="openai",
)
