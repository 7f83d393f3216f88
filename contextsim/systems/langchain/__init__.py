"""LangChain v1 and Deep Agents: message dumps (`messages_to_dict`), the
context-editing, trimming and summarization middleware, and Deep Agents' offloading
and summarization, each as the middleware Python that sets it up."""

from contextsim.systems.manifest import System

SYSTEM = System(
    label="LangChain and Deep Agents",
    importers=("format:LangChainImporter",),
    policies=(
        "deepagents:DeepAgentsPolicy",
        "policies:LangChainClearPolicy",
        "policies:LangChainTrimPolicy",
        "summarization:LangChainSummaryPolicy",
    ),
    exports="export:EXPORTS",
    mechanisms="tuning:MECHANISMS",
)
