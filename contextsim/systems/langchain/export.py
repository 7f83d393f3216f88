"""LangChain v1 and Deep Agents: the middleware Python that makes an agent manage its
context as `langchain_clear_tool_uses`, `langchain_trim`, `langchain_summarization`
and `deepagents` simulate it, with the chosen parameters.

Sources: langchain 1.5.2 (`langchain.agents.create_agent`;
`langchain.agents.middleware`: ContextEditingMiddleware, ClearToolUsesEdit,
SummarizationMiddleware), langchain-core 1.8.3 (`trim_messages`,
`count_tokens_approximately`), deepagents 0.7.32 (`create_deep_agent`, which replaces a
default middleware by one of the same name passed in `middleware`;
`deepagents.middleware.filesystem.FilesystemMiddleware`;
`deepagents.middleware.summarization.SummarizationMiddleware`).
"""

from __future__ import annotations

from contextsim.systems.exporting import ExportContext, Exporter, Snippet
from contextsim.systems.langchain.deepagents import EXEMPT_TOOLS, DeepAgentsParams
from contextsim.systems.langchain.policies import LangChainClearParams, LangChainTrimParams
from contextsim.systems.langchain.summarization import LangChainSummaryParams

DEFAULT_MODEL = "anthropic:claude-sonnet-4-6"
"""Deep Agents' default model, named when the run's model is unknown."""
ANTHROPIC_CPT = 3.3
"""Characters per token LangChain's counter takes for an Anthropic chat model (4.0
for any other): SummarizationMiddleware's _get_approximate_token_counter."""
TRUNCATE_MAX_LENGTH = 2_000
TRUNCATION_TEXT = "...(argument truncated)"
"""Deep Agents' defaults for clipping old write_file/edit_file arguments: a string
argument over 2,000 characters becomes its first 20 characters and this text."""
SCALING_NOTE = (
    "LangChain's default counter also scales its count by the usage the model reports "
    "(at most x1.25) and summarizes when the last reported total reaches the trigger: "
    "the simulation counts characters only, so the real agent may summarize earlier."
)


def model_id(ctx: ExportContext) -> tuple[str, tuple[str, ...]]:
    """The init_chat_model id of the run's model ("anthropic:" added to a Claude
    model), or DEFAULT_MODEL with a note when the run does not name one."""
    if not ctx.model:
        return DEFAULT_MODEL, (
            f"The run does not name its model: {DEFAULT_MODEL} is written; use yours.",
        )
    if ctx.model.startswith("claude"):
        return "anthropic:" + ctx.model, ()
    return ctx.model, ()


def _is_anthropic(model: str) -> bool:
    return model.startswith(("anthropic:", "claude"))


def _py(value: object) -> str:
    """A Python literal (tuples of strings, numbers, None, bools, strings)."""
    if isinstance(value, tuple):
        inner = ", ".join(_py(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return repr(value)


def _size(kind: str, value: float) -> str:
    """A LangChain ContextSize tuple: ints for tokens and messages."""
    number = value if kind == "fraction" else int(value)
    return f"({kind!r}, {number!r})"


def _counter(model: str, chars_per_token: float) -> tuple[list[str], str | None, list[str]]:
    """(imports, token_counter argument or None, notes): the counter is left to
    LangChain when it picks the simulated characters per token for this model."""
    default = ANTHROPIC_CPT if _is_anthropic(model) else 4.0
    if chars_per_token == default:
        return [], None, []
    imports = [
        "from functools import partial",
        "from langchain_core.messages.utils import count_tokens_approximately",
    ]
    arg = f"partial(count_tokens_approximately, chars_per_token={chars_per_token!r})"
    note = (
        f"The counter is set to {chars_per_token} characters per token (LangChain would "
        f"take {default} for this model); a counter of your own also turns off the usage "
        "scaling of LangChain's default one."
    )
    return imports, arg, [note]


def clear_tool_uses(ctx: ExportContext) -> tuple[Snippet, ...]:
    """ContextEditingMiddleware with one ClearToolUsesEdit, approximate counting."""
    p: LangChainClearParams = ctx.params
    model, notes = model_id(ctx)
    text = (
        "from langchain.agents import create_agent\n"
        "from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware\n"
        "from langchain.chat_models import init_chat_model\n"
        "\n"
        f"model = init_chat_model({model!r})\n"
        "context_editing = ContextEditingMiddleware(\n"
        "    edits=[\n"
        "        ClearToolUsesEdit(\n"
        f"            trigger={p.trigger!r},\n"
        f"            keep={p.keep!r},\n"
        f"            clear_at_least={p.clear_at_least!r},\n"
        f"            clear_tool_inputs={p.clear_tool_inputs!r},\n"
        f"            exclude_tools={_py(p.exclude_tools)},\n"
        f"            placeholder={p.placeholder!r},\n"
        "        )\n"
        "    ],\n"
        '    token_count_method="approximate",\n'
        ")\n"
        "agent = create_agent(model, tools=[], middleware=[context_editing])  # your tools\n"
    )
    label = "LangChain ContextEditingMiddleware (ClearToolUsesEdit)"
    return (Snippet("langchain", label, "python", text, notes),)


def trim(ctx: ExportContext) -> tuple[Snippet, ...]:
    """trim_messages in a before_model middleware: the model sees the trimmed list
    (the state keeps every message, as the simulation does)."""
    p: LangChainTrimParams = ctx.params
    model, notes = model_id(ctx)
    start_on = list(p.start_on) or None
    text = (
        "from langchain.agents import create_agent\n"
        "from langchain.agents.middleware import ModelRequest, wrap_model_call\n"
        "from langchain.chat_models import init_chat_model\n"
        "from langchain_core.messages import trim_messages\n"
        "from langchain_core.messages.utils import count_tokens_approximately\n"
        "\n"
        f"MAX_TOKENS = {ctx.budget!r}  # the budget simulated\n"
        "\n"
        "\n"
        "def trimmed(messages):\n"
        "    return trim_messages(\n"
        "        messages,\n"
        "        max_tokens=MAX_TOKENS,\n"
        '        strategy="last",\n'
        "        token_counter=count_tokens_approximately,\n"
        f"        include_system={p.include_system!r},\n"
        f"        start_on={start_on!r},\n"
        f"        allow_partial={p.allow_partial!r},\n"
        "    )\n"
        "\n"
        "\n"
        "@wrap_model_call\n"
        "def trim_context(request: ModelRequest, handler):\n"
        "    return handler(request.override(messages=trimmed(request.messages)))\n"
        "\n"
        "\n"
        f"model = init_chat_model({model!r})\n"
        "agent = create_agent(model, tools=[], middleware=[trim_context])  # your tools\n"
    )
    notes = (
        *notes,
        "LangChain has no trimming middleware: this one trims what each model call sees "
        "and keeps the whole history in the agent's state, as simulated.",
        "The system prompt create_agent adds is not among the messages trimmed: "
        "include_system applies to a system message in the history.",
    )
    label = "LangChain trim_messages (as a wrap_model_call middleware)"
    return (Snippet("langchain", label, "python", text, notes),)


def _trigger(p: LangChainSummaryParams) -> str:
    pairs = [_size(k, v) for k, v in p.triggers]
    if not pairs:
        return "None"
    if p.trigger_all:
        inner = ", ".join(f"{k!r}: {v if k == 'fraction' else int(v)!r}" for k, v in p.triggers)
        return "{" + inner + "}"
    return pairs[0] if len(pairs) == 1 else "[" + ", ".join(pairs) + "]"


def _window_line(window: int) -> str:
    return (
        f'model.profile = {{**(model.profile or {{}}), "max_input_tokens": {window!r}}}'
        "  # the window simulated\n"
    )


def summarization(ctx: ExportContext) -> tuple[Snippet, ...]:
    """SummarizationMiddleware with the chosen trigger, keep and trim."""
    p: LangChainSummaryParams = ctx.params
    model, notes_ = model_id(ctx)
    notes = list(notes_)
    imports, counter, counter_notes = _counter(model, p.chars_per_token)
    notes += counter_notes
    uses_window = p.trigger_fraction is not None or p.keep_fraction is not None
    window = p.window or ctx.hard_limit
    args = [
        "    model=model,",
        f"    trigger={_trigger(p)},",
        f"    keep={_size(*p.keep)},",
        f"    trim_tokens_to_summarize={p.trim_tokens_to_summarize!r},",
    ]
    if counter:
        args.append(f"    token_counter={counter},")
    text = (
        "\n".join(
            [
                *imports,
                "from langchain.agents import create_agent",
                "from langchain.agents.middleware import SummarizationMiddleware",
                "from langchain.chat_models import init_chat_model",
            ]
        )
        + "\n\n"
        + f"model = init_chat_model({model!r})\n"
        + (_window_line(window) if uses_window else "")
        + "summarization = SummarizationMiddleware(\n"
        + "\n".join(args)
        + "\n)\n"
        + "agent = create_agent(model, tools=[], middleware=[summarization])  # your tools\n"
    )
    if not p.triggers:
        notes.append("No trigger (LangChain's default): the middleware never summarizes.")
    notes.append(
        f"The summary's size is the model's to choose: the simulation assumed "
        f"{p.summary_tokens:,} tokens."
    )
    notes.append(SCALING_NOTE)
    label = "LangChain SummarizationMiddleware"
    return (Snippet("langchain", label, "python", text, tuple(notes)),)


def deepagents(ctx: ExportContext) -> tuple[Snippet, ...]:
    """create_deep_agent with its FilesystemMiddleware (offloading) and
    SummarizationMiddleware replaced by ones with the chosen parameters."""
    p: DeepAgentsParams = ctx.params
    model, notes_ = model_id(ctx)
    notes = list(notes_)
    imports, counter, counter_notes = _counter(model, p.chars_per_token)
    notes += counter_notes
    window = p.window or ctx.hard_limit
    if p.profile:
        trigger = _size("fraction", p.trigger_fraction)
        keep = _size("fraction", p.keep_fraction)
        truncate = (trigger, keep)
        model_args = f"{model!r}, max_tokens={p.max_output!r}"
    else:
        trigger = _size("tokens", p.fallback_trigger)
        keep = _size("messages", p.fallback_keep_messages)
        truncate = ("('messages', 20)", "('messages', 20)")
        model_args = repr(model)
        notes.append(
            "Simulated without a model profile: should the model have one, Deep Agents "
            "also summarizes a request over 95% of its window less the output tokens."
        )
    settings = (
        f'{{"trigger": {truncate[0]}, "keep": {truncate[1]}, '
        f'"max_length": {TRUNCATE_MAX_LENGTH}, "truncation_text": {TRUNCATION_TEXT!r}}}'
    )
    summary_args = [
        "            model=model,",
        "            backend=backend,",
        f"            trigger={trigger},",
        f"            keep={keep},",
        "            trim_tokens_to_summarize=None,",
        f"            truncate_args_settings={settings},",
    ]
    if counter:
        summary_args.append(f"            token_counter={counter},")
    text = (
        "\n".join(
            [
                *imports,
                "from deepagents import create_deep_agent",
                "from deepagents.backends import StateBackend",
                "from deepagents.middleware.filesystem import FilesystemMiddleware",
                "from deepagents.middleware.summarization import SummarizationMiddleware",
                "from langchain.chat_models import init_chat_model",
            ]
        )
        + "\n\n"
        + f"model = init_chat_model({model_args})\n"
        + (_window_line(window) if p.profile else "")
        + "backend = StateBackend()\n"
        + "agent = create_deep_agent(\n"
        + "    model=model,\n"
        + "    backend=backend,\n"
        + "    middleware=[  # these replace the default ones of the same name\n"
        + "        FilesystemMiddleware(\n"
        + "            backend=backend,\n"
        + f"            tool_token_limit_before_evict={p.tool_token_limit!r},\n"
        + f"            human_message_token_limit_before_evict={p.human_token_limit!r},\n"
        + "        ),\n"
        + "        SummarizationMiddleware(\n"
        + "\n".join(summary_args)
        + "\n        ),\n"
        + "    ],\n"
        + ")\n"
    )
    if tuple(p.exempt_tools) != EXEMPT_TOOLS:
        notes.append(
            "The tools whose results are never offloaded are fixed in Deep Agents "
            f"({', '.join(EXEMPT_TOOLS)}): the simulated exempt_tools cannot be set."
        )
    notes.append(
        f"The summary's size is the model's to choose: the simulation assumed "
        f"{p.summary_tokens:,} tokens."
    )
    notes.append(
        "Old write_file/edit_file arguments over 2,000 characters are clipped (the "
        "defaults, written out): the simulation does not model that clipping."
    )
    notes.append(SCALING_NOTE)
    label = "Deep Agents create_deep_agent (offloading and summarization)"
    return (Snippet("deepagents", label, "python", text, tuple(notes)),)


EXPORTS: dict[str, Exporter] = {
    "langchain_clear_tool_uses": clear_tool_uses,
    "langchain_trim": trim,
    "langchain_summarization": summarization,
    "deepagents": deepagents,
}
