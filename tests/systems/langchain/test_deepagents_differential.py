"""Fidelity of `deepagents` to LangChain Deep Agents 0.7.32.

Three layers:
1. Against the package itself, when it is importable (it is not a test dependency:
   deepagents==0.7.32 requires langchain-google-genai, whose google-genai pins
   tenacity<9.2, a downgrade of this environment): our stub renderer gives the very
   text the middleware writes, and our constants are the package's.
2. Always: the stub rules read from the 0.7.32 source (_message_eviction,
   backends.utils) and the size the policy counts for a stub: for a tool result over
   skeleton.STUB_MIN_CHARS characters (all that the default limit offloads) the stub's
   very size, as the skeleton renders it at build; under that (offloaded only at a
   lower limit) an approximation from the skeleton's preview (no line counts), close
   to the stub's size but not equal to it.
3. Always: summarization decisions against langchain 1.5.2's SummarizationMiddleware
   (which Deep Agents delegates trigger and cut to) on seeded random runs, with the
   package's glue around it (effective messages = summary + messages from the cut).
"""

from __future__ import annotations

import json
import random
import re
from functools import cache, partial
from hashlib import sha256
from typing import Any

import pytest
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.counting.offload_stubs import HUMAN_PATH, render_human_stub, render_tool_stub
from contextsim.counting.skeleton import STUB_MIN_CHARS, from_dict, to_dict
from contextsim.engine.policy import Context
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart
from contextsim.systems.langchain.deepagents import (
    CALL_ID,
    EXEMPT_TOOLS,
    SESSION_PATH,
    SUMMARY,
    SUMMARY_CHARS,
    DeepAgentsParams,
    DeepAgentsPlanner,
)

RNG_ALPHABET = "abc def ghi jkl\tёжи 上下文 😀"


def _text(rng: random.Random, lines: int, width: int) -> str:
    return "\n".join(
        "".join(rng.choice(RNG_ALPHABET) for _ in range(rng.randint(0, width)))
        for _ in range(lines)
    )


def _texts() -> list[str]:
    """Results of few and many lines, short and long (some over 1000 characters)."""
    rng = random.Random(5)
    shapes = [(0, 0), (1, 5), (3, 1200), (10, 80), (11, 80), (12, 2000), (99, 40), (1002, 9)]
    out = [_text(rng, lines, width) for lines, width in shapes]
    return [*out, "a\r\nb\rc\x0bd\x1ce\u2028f\n" * 4, "\n\n\n", "end\n" * 30]


IDS = ("call_1", "toolu_01A09q90qw90lq917835lq9", "c" * 32, "d" * 40, "x.y/z\\w", "é" * 70)


# --- 1. Against the package, when importable ------------------------------------------


@pytest.fixture(scope="module")
def deepagents() -> Any:
    return pytest.importorskip("deepagents", reason="deepagents==0.7.32 not installed")


def test_tool_stub_is_the_text_deepagents_renders(deepagents):
    from deepagents.backends.utils import sanitize_tool_call_id
    from deepagents.middleware._message_eviction import _render_too_large_tool_msg

    for text in _texts():
        for call_id in IDS:
            path = f"/large_tool_results/{sanitize_tool_call_id(call_id)}"
            real = _render_too_large_tool_msg(
                tool_call_id=call_id, file_path=path, content_str=text
            )
            assert render_tool_stub(text, call_id) == real


def test_an_empty_call_id_gets_a_path_of_the_same_form(deepagents, tmp_path):
    from deepagents.backends import FilesystemBackend
    from deepagents.middleware._message_eviction import _offload_tool_message_content

    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    for text in _texts():
        message = ToolMessage(text, tool_call_id="")
        real = _offload_tool_message_content(message, text, backend, "/large_tool_results")
        assert real is not None and isinstance(real.content, str)
        drawn = re.search(r"/large_tool_results/unknown-([0-9a-f]{8})\n", real.content)
        assert drawn is not None
        assert render_tool_stub(text, "").replace("0" * 8, drawn[1], 1) == real.content


def test_human_stub_and_summary_are_the_texts_deepagents_renders(deepagents):
    from deepagents.middleware.filesystem import _build_truncated_human_message
    from deepagents.middleware.summarization import SummarizationMiddleware as DeepSummary

    for text in _texts():
        real = _build_truncated_human_message(HumanMessage(text), HUMAN_PATH).content
        assert render_human_stub(text, HUMAN_PATH) == real
    built = DeepSummary._build_new_messages_with_path(None, "the summary", SESSION_PATH)
    assert built[0].content == SUMMARY.format(path=SESSION_PATH, summary="the summary")


def test_constants_are_the_packages(deepagents):
    import inspect

    from deepagents.middleware import filesystem
    from deepagents.middleware.summarization import compute_summarization_defaults

    assert deepagents.__version__ == "0.7.32"
    assert filesystem.TOOLS_EXCLUDED_FROM_EVICTION == EXEMPT_TOOLS
    assert filesystem.NUM_CHARS_PER_TOKEN == 4
    init = inspect.signature(filesystem.FilesystemMiddleware.__init__).parameters
    p = DeepAgentsParams()
    assert init["tool_token_limit_before_evict"].default == p.tool_token_limit
    assert init["human_message_token_limit_before_evict"].default == p.human_token_limit
    with_profile = GenericFakeChatModel(messages=iter(()), profile={"max_input_tokens": 1})
    assert compute_summarization_defaults(with_profile)["trigger"] == ("fraction", 0.85)
    assert compute_summarization_defaults(with_profile)["keep"] == ("fraction", 0.10)
    without = compute_summarization_defaults(GenericFakeChatModel(messages=iter(())))
    assert (without["trigger"], without["keep"]) == (("tokens", 170_000), ("messages", 6))


def test_create_deep_agent_summarizes_with_the_policys_defaults(deepagents, monkeypatch):
    """create_deep_agent's own stack, for its default model and for a model without a
    profile: the summarization middleware's trigger, keep, counter and input budget
    are the policy's defaults; old write_file/edit_file arguments are clipped at the
    same trigger and keep with a profile, at 20 messages keeping 20 without (a string
    argument over 2,000 characters becomes its first 20 and '...(argument
    truncated)'), which the policy does not model."""
    import deepagents.graph as graph
    from langchain.agents.middleware.types import ModelRequest
    from langchain_anthropic import ChatAnthropic

    stacks: list[list[Any]] = []
    real = graph.create_agent
    monkeypatch.setattr(
        graph, "create_agent", lambda *a, **k: stacks.append(k["middleware"]) or real(*a, **k)
    )
    p = DeepAgentsParams()
    with pytest.warns(Warning, match="default model is deprecated"):
        default = graph.get_default_model()
    assert isinstance(default, ChatAnthropic) and default.model == "claude-sonnet-4-6"
    assert default.profile is not None and default.max_tokens == p.max_output
    assert default.profile["max_output_tokens"] == p.max_output
    window = default.profile["max_input_tokens"]
    no_profile = GenericFakeChatModel(messages=iter(()))
    for model in (default, no_profile):
        graph.create_deep_agent(model=model)
        found = [m for m in stacks[-1] if m.name == "SummarizationMiddleware"]
        assert len(found) == 1
        mw, helper = found[0], found[0]._lc_helper
        assert helper.trim_tokens_to_summarize is None
        assert (mw._max_arg_length, mw._truncation_text) == (2_000, "...(argument truncated)")
        if model is default:
            assert helper.trigger == ("fraction", p.trigger_fraction)
            assert helper.keep == ("fraction", p.keep_fraction)
            assert mw._truncate_args_trigger == ("fraction", p.trigger_fraction)
            assert mw._truncate_args_keep == ("fraction", p.keep_fraction)
            assert helper.token_counter.keywords["chars_per_token"] == p.chars_per_token
            request = ModelRequest(model=model, messages=[], model_settings={})
            assert mw._input_budget(request) == int(window * 0.95) - p.max_output
        else:
            assert helper.trigger == ("tokens", p.fallback_trigger)
            assert helper.keep == ("messages", p.fallback_keep_messages)
            assert mw._truncate_args_trigger == mw._truncate_args_keep == ("messages", 20)
            assert helper.token_counter.keywords.get("chars_per_token", 4.0) == 4.0


# --- 2. The rules, and the size the policy counts ---------------------------------------


def test_stub_rules_of_0_7_32():
    lines = [f"line {k}" for k in range(30)]
    stub = render_tool_stub("\n".join(lines), "call_7")
    assert stub.startswith(
        "Tool result too large, the result of this tool call call_7 was saved in the "
        "filesystem at this path: /large_tool_results/call_7\n"
    )
    assert "1  line 0\n2  line 1\n3  line 2\n4  line 3\n5  line 4\n" in stub
    assert "\n... [20 lines truncated] ...\n26  line 25\n" in stub and stub.endswith(
        "30  line 29\n"
    )
    assert "preview showing the head and tail of the result (lines of the form" in stub
    short = render_tool_stub("x" * 1500 + "\nshort", "a.b/" + "c" * 40)
    assert "\n1  " + "x" * 1000 + "\n2  short\n" in short and "x" * 1001 not in short
    assert "Here is a preview of the result (the output contains lines longer than 1000" in short
    assert "call a.b/" + "c" * 28 + "... was saved" in short  # ids over 32 are cut when shown
    assert "/large_tool_results/a_b_" + "c" * 40 + "\n" in short  # but whole in the path
    hashed = render_tool_stub("x", "é" * 70)  # over 128 bytes: the path has its hash
    assert "/large_tool_results/call-" + sha256(("é" * 70).encode()).hexdigest() + "\n" in hashed
    unknown = render_tool_stub("x", "")  # no id: random in the package, zeros here
    assert "tool call  was saved in the filesystem at this path: /large_tool_results/" in unknown
    assert "/large_tool_results/unknown-00000000\n" in unknown


def _real_stub(text: str, call_id: str) -> str:
    """The stub Deep Agents renders for `text`: the package's own rendering when it is
    importable, else ours (the very same text: see layer 1)."""
    try:
        from deepagents.backends.utils import sanitize_tool_call_id
        from deepagents.middleware._message_eviction import _render_too_large_tool_msg
    except ImportError:
        return render_tool_stub(text, call_id)
    path = f"/large_tool_results/{sanitize_tool_call_id(call_id)}"
    return _render_too_large_tool_msg(tool_call_id=call_id, file_path=path, content_str=text)


def _planner(results: list[tuple[str, str]], estimator: str, limit: int) -> DeepAgentsPlanner:
    """A planner over go / one call per (call id, text) / their results in one message /
    done, at tool_token_limit `limit`."""
    est = ESTIMATORS[estimator]
    calls = tuple(ToolCallPart(call_id, "fetch", "{}") for call_id, _ in results)
    messages = (
        Message("user", (TextPart("go"),)),
        Message("assistant", calls),
        Message("tool", tuple(ToolResultPart(call_id, text) for call_id, text in results)),
        Message("assistant", (TextPart("done"),)),
    )
    sk = build(Run("r", messages), est)
    params = DeepAgentsParams(tool_token_limit=limit)
    return DeepAgentsPlanner(Context(sk, 10**6, 10**6, est.count), params)


def _stub_sizes(text: str, estimator: str, call_id: str = CALL_ID, limit: int = 20_000):
    """(tokens the policy counts for the stub of `text`, tokens of the real stub)."""
    planner = _planner([(call_id, text)], estimator, limit)
    assert planner.statics.offloaded[2]
    real = MESSAGE_OVERHEAD + ESTIMATORS[estimator].count(_real_stub(text, call_id))
    return planner.statics.offload_tokens[2], real


def _widths(rng: random.Random, widths: list[int]) -> str:
    return "\n".join("".join(rng.choice(RNG_ALPHABET) for _ in range(w)) for w in widths)


@cache
def _big_texts() -> dict[str, str]:
    """Results over STUB_MIN_CHARS characters: few and many lines, short and very long."""
    rng = random.Random(11)
    return {
        "many short lines": _text(rng, 3_000, 80),
        "many lines of 160": _text(rng, 1_500, 160),
        "40,000 tiny lines": _text(rng, 40_000, 6),
        "lines near the clip": _text(rng, 200, 900),
        "one line": "y" * 90_000,
        "three long lines": "\n".join(["y" * 30_000] * 3),
        "seven mixed lines": _widths(rng, [12_000, 5, 4_000, 0, 999, 1_001, 3_000]),
        "twelve clipped lines": _widths(rng, [2_000] * 12),
        "long head and tail": _widths(rng, [5_000, 7_000, *[10] * 3_000, 3_000]),
        "blank lines": "\n" * 25_000,
        "windows line ends": "row\r\n" * 6_000,
        "just over the minimum": "z" * (STUB_MIN_CHARS + 1),
    }


BIG_IDS = (CALL_ID, "call_1", "d" * 40, "x.y/z\\w" + "q" * 30, "é" * 70)
"""Call ids: short, Anthropic-like, cut when shown, with path separators, hashed."""


@pytest.mark.parametrize("estimator", ["chars4", "script", "o200k"])
@pytest.mark.parametrize("shape", list(_big_texts()))
def test_counted_stub_is_the_real_stub_above_the_minimum(estimator, shape):
    # Results over STUB_MIN_CHARS: the skeleton renders the stub from the text and the
    # real call id, so the policy counts exactly the stub Deep Agents writes, under the
    # run's estimator and, for the middleware's decisions, under its own counter.
    text = _big_texts()[shape]
    assert len(text) > STUB_MIN_CHARS
    est = ESTIMATORS[estimator]
    limits = [STUB_MIN_CHARS // 4] + ([20_000] if len(text) > 4 * 20_000 else [])
    for call_id in BIG_IDS:
        real = _real_stub(text, call_id)
        lc = ToolMessage(real, tool_call_id=call_id, name="fetch")
        for limit in limits:  # the lowest exact limit, and the default when it offloads
            planner = _planner([(call_id, text)], estimator, limit)
            assert planner.statics.offloaded[2]
            counted = planner.statics.offload_tokens[2]
            assert counted == MESSAGE_OVERHEAD + est.count(real), (call_id, limit)
            assert planner.counts[2] == count_tokens_approximately([lc], chars_per_token=3.3)


@pytest.mark.parametrize("estimator", ["chars4", "o200k"])
def test_each_result_of_a_message_has_its_own_stub(estimator):
    # One ToolMessage per result: only those over the limit are offloaded, each with its
    # own stub; the rest of the message counts as its share by characters of the
    # message's tokens (close under chars4 only: o200k's tokens per character vary).
    rng = random.Random(3)
    first, small, second = _text(rng, 900, 60), "s" * 5_000, _text(rng, 20, 3_000)
    results = [("call_a", first), ("call_b", small), ("d" * 40, second)]
    planner = _planner(results, estimator, STUB_MIN_CHARS // 4)
    est = ESTIMATORS[estimator]
    stubs = [_real_stub(first, "call_a"), _real_stub(second, "d" * 40)]
    exact = MESSAGE_OVERHEAD + sum(est.count(t) for t in stubs)
    kept = planner.statics.offload_tokens[2] - exact
    assert kept > 0
    if estimator == "chars4":
        assert abs(kept - est.count(small)) <= 2
    lc = [
        ToolMessage(stubs[0], tool_call_id="call_a", name="fetch"),
        ToolMessage(small, tool_call_id="call_b", name="fetch"),
        ToolMessage(stubs[1], tool_call_id="d" * 40, name="fetch"),
    ]
    assert planner.counts[2] == count_tokens_approximately(lc, chars_per_token=3.3)
    sk = planner.sk
    assert sk.stub_tokens[2][1] == sk.stub_chars[2][1] == 0  # not over STUB_MIN_CHARS
    assert sk.stub_chars[2][0] == len(stubs[0]) and sk.stub_tokens[1] == ()


def test_stubs_are_rendered_only_above_the_minimum():
    at, over = "z" * STUB_MIN_CHARS, "z" * (STUB_MIN_CHARS + 1)
    sk = _planner([("a", at), ("b", over)], "chars4", 1_000).sk
    assert sk.stub_chars[2] == (0, len(render_tool_stub(over, "b")))
    assert _planner([("a", at)], "chars4", 1_000).sk.stub_tokens == ((),) * 4


@pytest.mark.parametrize("estimator", ["chars4", "script", "o200k"])
@pytest.mark.parametrize(("lines", "width"), [(600, 60), (1_500, 24), (150, 250), (4_000, 8)])
def test_counted_stub_is_within_a_few_tokens_at_or_under_the_minimum(estimator, lines, width):
    # At most STUB_MIN_CHARS characters (offloaded only at a tool_token_limit under
    # 5,000) the stub is not rendered: its size comes from the skeleton's preview, which
    # has the lines but not their numbers or the marker's count. The policy assumes
    # 1,000 lines, so only the gutters and the marker can differ.
    rng = random.Random(lines)
    text = _text(rng, lines, width)
    assert 4 * 500 < len(text) <= STUB_MIN_CHARS
    ours, real = _stub_sizes(text, estimator, limit=500)
    assert abs(ours - real) <= 6, (ours, real)


@pytest.mark.parametrize("estimator", ["chars4", "o200k"])
def test_counted_stub_of_few_long_lines_at_or_under_the_minimum_assumes_one_line(estimator):
    one, real_one = _stub_sizes("y" * 15_000, estimator, limit=1_000)
    assert abs(one - real_one) <= 2  # exact up to rounding: one line of 1,000 shown
    three, real_three = _stub_sizes("\n".join(["y" * 5_000] * 3), estimator, limit=1_000)
    # Every line is clipped to 1,000 characters, and the policy counts only one of them.
    assert abs(three - one) <= 2 and three < real_three


def test_skeleton_data_keeps_the_stub_sizes():
    text = "\n".join(["y" * 30_000] * 3)
    sk = _planner([("call_a", "s" * 100), ("call_b", text)], "o200k", 20_000).sk
    assert sk.stub_tokens[2][0] == 0 < sk.stub_tokens[2][1]
    assert sk.stub_chars[2] == (0, len(render_tool_stub(text, "call_b")))
    data = json.loads(json.dumps(to_dict(sk)))
    assert from_dict(data) == sk
    # Data stored before the fields existed still loads: the policy then approximates.
    old = from_dict({k: v for k, v in data.items() if k not in ("stub_tokens", "stub_chars")})
    assert old.stub_tokens == old.stub_chars == ()
    est = ESTIMATORS["o200k"]
    approx = DeepAgentsPlanner(Context(old, 10**6, 10**6, est.count), DeepAgentsParams())
    assert approx.statics.offloaded[2]


# --- 3. Summarization decisions against langchain's middleware ---------------------------

TOOLS = ("fetch", "bash", "read_file", "search")
ID_WIDTH = len(CALL_ID)
"""Call ids as long as the policy's stand-in, so offloaded stubs have its exact size."""


def _run(rng: random.Random) -> list[Message]:
    """A seeded run. Offloadable results are one long line of at most STUB_MIN_CHARS
    characters or any text over it, and big human messages 1,000 lines of 100
    characters: the shapes whose stub size the policy knows exactly."""
    messages = [Message("system", (TextPart("s" * rng.randint(0, 3_000)),))]
    messages.append(Message("user", (TextPart("u" * rng.randint(1, 2_000)),)))
    calls = 0
    for _ in range(rng.randint(5, 45)):
        if rng.random() < 0.1:
            messages.append(Message("assistant", (TextPart("a" * rng.randint(1, 300)),)))
            text = "\n".join(["h" * 100] * 1000) if rng.random() < 0.3 else "q" * 500
            messages.append(Message("user", (TextPart(text),)))
        ids = [f"{calls + j:0{ID_WIDTH}d}" for j in range(rng.choice((1, 1, 1, 2, 3)))]
        calls += len(ids)
        names = [rng.choice(TOOLS) for _ in ids]
        args = '{"path": "' + "p" * rng.randint(0, 60) + '"}'
        calls_part = tuple(ToolCallPart(i, n, args) for i, n in zip(ids, names, strict=True))
        messages.append(Message("assistant", (TextPart("t" * rng.randint(0, 200)), *calls_part)))
        for i in ids:
            big = rng.random() < 0.1
            text = "b" * rng.randint(9_000, 20_000) if big else _text(rng, 20, 60)
            if big and rng.random() < 0.5:  # over the minimum: lines of any shape
                lines = rng.choice((2, 9, 300))
                text = "b" * STUB_MIN_CHARS + "\n" + _text(rng, lines, 12_000 // lines)
            messages.append(Message("tool", (ToolResultPart(i, text),)))
    return messages


def _langchain(messages: list[Message], offloaded: list[bool]) -> list[BaseMessage]:
    """One LangChain message per message; offloaded ones carry the real stub."""
    names: dict[str, str] = {}
    out: list[BaseMessage] = []
    for m, off in zip(messages, offloaded, strict=True):
        if m.role == "system":
            out.append(SystemMessage(m.text))
        elif m.role == "assistant":
            calls = [
                {"name": c.name, "args": json.loads(c.arguments), "id": c.id} for c in m.tool_calls
            ]
            names.update((c.id, c.name) for c in m.tool_calls)
            out.append(AIMessage(m.text, tool_calls=calls))
        elif m.role == "tool":
            r = m.tool_results[0]
            text = render_tool_stub(r.text, r.call_id) if off else r.text
            out.append(ToolMessage(text, tool_call_id=r.call_id, name=names[r.call_id]))
        else:
            out.append(HumanMessage(render_human_stub(m.text) if off else m.text))
    return out


def _middleware(p: DeepAgentsParams, window: int) -> SummarizationMiddleware[Any, Any, Any]:
    counter = partial(count_tokens_approximately, chars_per_token=p.chars_per_token)
    if p.profile:
        model = GenericFakeChatModel(messages=iter(()), profile={"max_input_tokens": window})
        return SummarizationMiddleware(
            model, trigger=("fraction", p.trigger_fraction), keep=("fraction", p.keep_fraction),
            token_counter=counter,
        )  # fmt: skip
    return SummarizationMiddleware(
        GenericFakeChatModel(messages=iter(())), trigger=("tokens", p.fallback_trigger),
        keep=("messages", p.fallback_keep_messages), token_counter=counter,
    )  # fmt: skip


def _real_boundaries(messages: list[Message], p: DeepAgentsParams, window: int, planner: Any):
    """Deep Agents' loop: effective messages, one count, trigger, cut, state cutoff."""
    lc = _langchain(messages, planner.statics.offloaded)
    mw = _middleware(p, window)
    sys_end = planner.sys_end
    chars = SUMMARY_CHARS * p.summary_tokens
    summary = HumanMessage(SUMMARY.format(path=SESSION_PATH, summary="z" * chars))
    cutoff: int | None = None
    out = []
    for end in planner.sk.ends:
        conv = lc[sys_end:end]
        eff = conv if cutoff is None else [summary, *conv[cutoff:]]
        total = mw.token_counter([*lc[:sys_end], *eff])
        budget = max(0, int(window * 0.95) - p.max_output)
        if mw._should_summarize(eff, total) or (p.profile and total > budget):
            cut = mw._determine_cutoff_index(eff)
            if cut > 0:
                cutoff = cut if cutoff is None else cutoff + cut - 1
        out.append(None if cutoff is None else sys_end + cutoff)
    return out


@pytest.mark.parametrize("chunk", range(4))
def test_summary_boundaries_match_langchains_middleware(chunk):
    acted = 0
    for seed in range(chunk * 30, chunk * 30 + 30):
        rng = random.Random(seed)
        messages = _run(rng)
        window = rng.randint(3_000, 40_000)
        p = DeepAgentsParams(
            window=window,
            profile=rng.random() < 0.7,
            max_output=rng.choice((0, 0, 1_000, 4_000)),
            chars_per_token=rng.choice((3.3, 4.0)),
            fallback_trigger=window,
            tool_token_limit=rng.choice((2_000, None)),
            human_token_limit=rng.choice((20_000, None)),
            summary_tokens=rng.randint(50, 1_500),
        )
        sk = build(Run(f"seed {seed}", tuple(messages)), ESTIMATORS["chars4"])
        planner = DeepAgentsPlanner(Context(sk, 10**9, 10**9, ESTIMATORS["chars4"].count), p)
        expected = _real_boundaries(messages, p, window, planner)
        got = [plan.gap_end or None for plan in map(planner.plan, sk.ends)]
        assert got == expected, seed
        acted += any(expected)
    assert acted >= 10  # the runs do reach the trigger


def test_the_real_middleware_makes_the_same_cuts(deepagents, tmp_path):
    """Where deepagents is installed: its own wrap_model_call, request after request."""
    from deepagents.backends import FilesystemBackend
    from deepagents.middleware.summarization import SummarizationMiddleware as DeepSummary
    from langchain.agents.middleware.types import ExtendedModelResponse, ModelRequest
    from langchain.agents.middleware.types import ModelResponse as Response

    acted = 0
    for seed in range(40):
        rng = random.Random(1_000 + seed)
        messages = _run(rng)
        window = rng.randint(15_000, 40_000)
        p = DeepAgentsParams(
            window=window,
            max_output=rng.choice((0, 1_000)),
            chars_per_token=rng.choice((3.3, 4.0)),
            tool_token_limit=rng.choice((2_000, None)),
            human_token_limit=rng.choice((20_000, None)),
            summary_tokens=rng.randint(50, 1_000),
        )
        sk = build(Run(f"seed {seed}", tuple(messages)), ESTIMATORS["chars4"])
        planner = DeepAgentsPlanner(Context(sk, 10**9, 10**9, ESTIMATORS["chars4"].count), p)
        lc = _langchain(messages, planner.statics.offloaded)
        model = GenericFakeChatModel(messages=iter(()), profile={"max_input_tokens": window})
        summary = "z" * (SUMMARY_CHARS * p.summary_tokens)
        middleware = DeepSummary(
            model=model,
            backend=FilesystemBackend(root_dir=tmp_path / str(seed)),
            trigger=("fraction", p.trigger_fraction),
            keep=("fraction", p.keep_fraction),
            token_counter=partial(count_tokens_approximately, chars_per_token=p.chars_per_token),
            trim_tokens_to_summarize=None,
            summarizer=lambda _messages, text=summary: text,
        )
        state: dict[str, Any] = {}
        for end in sk.ends:
            state["messages"] = lc[1:end]
            request = ModelRequest(
                model=model,
                messages=lc[1:end],
                system_message=lc[0],
                state=state,  # type: ignore[arg-type]
                model_settings={"max_tokens": p.max_output},
            )
            try:
                out = middleware.wrap_model_call(
                    request, lambda _r: Response(result=[AIMessage("")])
                )
            except ContextOverflowError:
                break  # still over the input budget once summarized: the run stops here
            if isinstance(out, ExtendedModelResponse) and out.command.update:
                state.update({k: v for k, v in out.command.update.items() if k != "messages"})
            event = state.get("_summarization_event")
            expected = None if event is None else 1 + event["cutoff_index"]
            assert (planner.plan(end).gap_end or None) == expected, (seed, end)
        acted += "_summarization_event" in state
    assert acted >= 10
