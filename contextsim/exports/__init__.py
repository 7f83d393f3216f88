""" "Use it in your agent": a tuned policy as the configuration of the real system it
models, with the parameters currently chosen.

Each exporter takes an ExportContext (the policy's params and the run's budget, hard
limit and model) and gives one or more Snippets: the exact text to paste (a request's
JSON, middleware Python, a TOML or YAML file, environment variables), with notes on
what the real system cannot express. Exporters live in one module per target system
(`contextsim/exports/<system>.py`) and registered here by policy name: a plain dict.
A policy without a real counterpart (the seed system's `turns`, `none`) has none.

Units: tokens, as the policies' own parameters.
"""

from __future__ import annotations

from contextsim.exports import (
    adk,
    anthropic,
    claude_code,
    codex,
    inspect_ai,
    langchain,
    letta,
    openai,
    openhands,
    swe_agent,
)
from contextsim.exports.base import ExportContext, Exporter, Snippet

EXPORTERS: dict[str, Exporter] = {}
"""Policy name -> its exporter."""
EXPORTERS.update(openai.EXPORTS)
EXPORTERS.update(codex.EXPORTS)
EXPORTERS.update(claude_code.EXPORTS)
EXPORTERS.update(anthropic.EXPORTS)
EXPORTERS.update(letta.EXPORTS)
EXPORTERS.update(adk.EXPORTS)
EXPORTERS.update(inspect_ai.EXPORTS)
EXPORTERS.update(swe_agent.EXPORTS)
EXPORTERS.update(openhands.EXPORTS)
EXPORTERS.update(langchain.EXPORTS)


def export(policy: str, ctx: ExportContext) -> tuple[Snippet, ...]:
    """The snippets that make the real system behave as `policy` simulates with
    `ctx`; () for a policy without a real counterpart."""
    found = EXPORTERS.get(policy)
    return () if found is None else found(ctx)
