"""Letta (formerly MemGPT): its summarizers (the older message-count eviction and the
token-based sliding window) and the settings that choose them."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="Letta",
    policies=("policies:LettaSummarizerPolicy", "policies:LettaSlidingPolicy"),
    exports="export:EXPORTS",
    mechanisms="tuning:MECHANISMS",
)
