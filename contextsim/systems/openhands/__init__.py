"""OpenHands (All Hands AI): its event streams and its condensers (observation
masking, amortized forgetting, LLM summarizing)."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="OpenHands",
    importers=("format:OpenHandsImporter",),
    policies=(
        "policies:MaskingPolicy",
        "policies:ForgettingPolicy",
        "policies:SummarizingPolicy",
    ),
    exports="export:EXPORTS",
    mechanisms="tuning:MECHANISMS",
)
