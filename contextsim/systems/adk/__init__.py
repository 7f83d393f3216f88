"""Google's Agent Development Kit: its event compaction (`EventsCompactionConfig`)."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="Google ADK",
    policies=("policies:AdkPolicy",),
    exports="export:EXPORTS",
    mechanisms="tuning:MECHANISMS",
)
