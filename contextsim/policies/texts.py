"""What each policy puts in place of what it removes, for showing a request as sent."""

from __future__ import annotations

from typing import Any

from contextsim.policies.editing import ANTHROPIC_PLACEHOLDER
from contextsim.policies.seed import CLEARED_NOTE, TRUNCATION_NOTE

OFFLOAD_STUB = (
    "[Offloaded to /large_tool_results/<tool call id>: a stub with the first and last 5 "
    "lines stands here; the agent can read the whole file.]"
)
SUMMARY = "[One message summarizing the earlier conversation (history saved to a file).]"


def replacement_texts(policy: str, params: Any) -> dict[str, str]:
    """Texts keyed by what they replace: "c" a cleared result, "o" an offloaded one,
    "t" the note inserted where messages were left out, "s" a summary. A key is
    missing when the policy inserts nothing there."""
    if policy in ("turns", "mythex"):
        texts = {"t": TRUNCATION_NOTE}
        if policy == "mythex":
            texts["c"] = CLEARED_NOTE
        return texts
    if policy == "anthropic_clear_tool_uses":
        return {"c": ANTHROPIC_PLACEHOLDER}
    if policy == "langchain_clear_tool_uses":
        return {"c": str(getattr(params, "placeholder", "[cleared]"))}
    if policy == "deepagents":
        return {"o": OFFLOAD_STUB, "s": SUMMARY}
    return {}
