"""SWE-agent (Princeton NLP): its trajectories (`.traj`) and its
`last_n_observations` history processor."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="SWE-agent",
    importers=("format:SWEAgentImporter",),
    policies=("policies:LastNPolicy",),
    exports="export:EXPORTS",
    provider="openai",
)
