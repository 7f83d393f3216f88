"""Inspect AI (UK AISI's evaluation framework): its eval logs, read from the exact
provider calls they record, and its `react()` agent's compaction strategies."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="Inspect AI",
    importers=("format:InspectImporter",),
    policies=("policies:InspectPolicy",),
    exports="export:EXPORTS",
    provider="openai",
)
