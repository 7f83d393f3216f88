"""A system's manifest: what its folder provides, named by dotted path.

Paths are "module:attribute", relative to the system's package (e.g.
"format:ClaudeCodeImporter"), so a manifest imports nothing; contextsim.registry
imports the parts when a registry is first used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class System:
    """One agent system. `label` is how people name it; `importers` the Importer classes
    of its log formats, in the order detection tries them; `policies` its Policy
    classes, in the order the pages list them; `exports` a dict of policy name ->
    Exporter; `provider` whose list prices its runs fall back to when their model's
    are unknown; `mechanisms` the context mechanisms its users can set
    (contextsim.analysis.tuning.Mechanism, a tuple); `api_of` the provider whose API
    it is, when it is one; `uses_api` the provider whose API the agent calls with
    settings of its user's (that API's mechanisms are offered for its runs too)."""

    label: str
    importers: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    exports: str | None = None
    provider: Literal["anthropic", "openai"] = "anthropic"
    mechanisms: str | None = None
    api_of: Literal["anthropic", "openai"] | None = None
    uses_api: Literal["anthropic", "openai"] | None = None
