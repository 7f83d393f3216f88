"""Anthropic's Messages API: logged requests and responses, and the API's own context
management (context editing and server-side compaction) as request fields."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="Anthropic Messages API",
    importers=("format:AnthropicImporter",),
    policies=(
        "policies:AnthropicClearPolicy",
        "policies:ClearThinkingPolicy",
        "policies:AnthropicEditingPolicy",
        "compaction:AnthropicCompactionPolicy",
    ),
    exports="export:EXPORTS",
    mechanisms="tuning:MECHANISMS",
    api_of="anthropic",
)
