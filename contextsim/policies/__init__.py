"""Policies: history + budget + estimator -> the request to send, found in a registry.

Each policy is a small class behind the Policy protocol (policies.base) with typed
parameters whose defaults are the real system's, and a docstring citing its source.
"""

from __future__ import annotations

from contextsim.policies.adk import AdkPolicy
from contextsim.policies.anthropic_compaction import AnthropicCompactionPolicy
from contextsim.policies.base import Policy
from contextsim.policies.compaction import (
    ClaudeCodePolicy,
    CodexPolicy,
    ForgettingPolicy,
    SummarizingPolicy,
)
from contextsim.policies.deepagents import DeepAgentsPolicy
from contextsim.policies.editing import (
    AnthropicClearPolicy,
    AnthropicEditingPolicy,
    ClearThinkingPolicy,
)
from contextsim.policies.inspect_ai import InspectPolicy
from contextsim.policies.langchain import LangChainClearPolicy, LangChainTrimPolicy
from contextsim.policies.langchain_summary import LangChainSummaryPolicy
from contextsim.policies.letta import LettaSlidingPolicy, LettaSummarizerPolicy
from contextsim.policies.logged import LoggedPolicy
from contextsim.policies.microcompact import MicrocompactPolicy
from contextsim.policies.observations import LastNPolicy, MaskingPolicy, TrimmerPolicy
from contextsim.policies.openai import CompactionPolicy, TruncationPolicy
from contextsim.policies.seed import MythexPolicy, NonePolicy, TurnsPolicy

POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        LoggedPolicy(),
        NonePolicy(),
        TurnsPolicy(),
        MythexPolicy(),
        DeepAgentsPolicy(),
        AnthropicClearPolicy(),
        ClearThinkingPolicy(),
        AnthropicEditingPolicy(),
        AnthropicCompactionPolicy(),
        LangChainClearPolicy(),
        LangChainTrimPolicy(),
        LangChainSummaryPolicy(),
        LastNPolicy(),
        MaskingPolicy(),
        TrimmerPolicy(),
        ForgettingPolicy(),
        SummarizingPolicy(),
        CodexPolicy(),
        ClaudeCodePolicy(),
        TruncationPolicy(),
        CompactionPolicy(),
        MicrocompactPolicy(),
        LettaSummarizerPolicy(),
        LettaSlidingPolicy(),
        AdkPolicy(),
        InspectPolicy(),
    )
}
