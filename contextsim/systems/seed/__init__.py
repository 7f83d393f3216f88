"""The seed system: the agent of the seed incident, before its fix (`turns`) and
after (`mythex`), with `none` as the baseline, and the demo runs that reproduce the
incident (DESIGN.md 4.2, 4.8)."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="the seed system",
    policies=("policies:NonePolicy", "policies:TurnsPolicy", "policies:MythexPolicy"),
)
