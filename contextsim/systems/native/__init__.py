"""contextsim's own log format (docs/format.md): runs, messages and usage as
contextsim stores them, for any agent a script can write out."""

from contextsim.systems.manifest import System

SYSTEM = System(label="contextsim native", importers=("format:NativeImporter",))
