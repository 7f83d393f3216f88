"""OpenTelemetry GenAI spans: OTLP JSON files and what the OTLP/HTTP receiver takes
(GenAI semantic conventions, OpenInference, OpenLLMetry)."""

from contextsim.systems.manifest import System

SYSTEM = System(label="OpenTelemetry GenAI spans", importers=("format:OTelImporter",))
