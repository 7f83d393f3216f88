"""LangChain's context-editing and trimming policies: their parameters, with the
libraries' defaults."""

from __future__ import annotations

import pytest

from contextsim.engine.policy import make_params
from contextsim.systems.langchain.policies import LangChainClearParams, LangChainTrimParams


def test_langchain_parameters_parse_from_text_with_the_libraries_defaults() -> None:
    assert LangChainClearParams() == LangChainClearParams(100_000, 3, 0, (), False, "[cleared]")
    clear = make_params(
        LangChainClearParams, {"clear_at_least": "2000", "placeholder": "[gone]", "keep": "0"}
    )
    assert (clear.clear_at_least, clear.placeholder, clear.keep) == (2_000, "[gone]", 0)
    assert LangChainTrimParams() == LangChainTrimParams(True, ("human",), False)
    trim = make_params(
        LangChainTrimParams,
        {"start_on": "human,tool", "include_system": "no", "allow_partial": "1"},
    )
    assert trim == LangChainTrimParams(False, ("human", "tool"), True)
    assert make_params(LangChainTrimParams, {"start_on": ""}).start_on == ()
    with pytest.raises(ValueError, match="start_on: unknown message type bot"):
        make_params(LangChainTrimParams, {"start_on": "human,bot"})
