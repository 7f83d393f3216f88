"""SkeletonBuilder: one pass, any number of estimators, fed a batch at a time, gives
each estimator's skeleton as building it alone from the whole run does."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.synthetic import long_run
from contextsim.counting.builder import SkeletonBuilder, build, preview_text
from contextsim.counting.estimators import ESTIMATORS, MESSAGE_OVERHEAD
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart, request_bounds
from tests.engine.histories import histories

FAST = [ESTIMATORS[n] for n in ("chars4", "script", "calibrated-o200k")]


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1, max_value=60), st.integers(min_value=1, max_value=17))
def test_fed_in_batches_for_several_estimators_it_equals_one_build_each(steps, batch):
    run = long_run(steps, seed=steps)
    builder = SkeletonBuilder(FAST)
    for start in range(0, len(run.messages), batch):
        builder.add(run.messages[start : start + batch])
    built = builder.finish(run)
    assert built == {e.name: build(run, e) for e in FAST}


def test_a_server_side_call_answered_in_its_own_message_is_linked_to_it():
    search = ToolCallPart("s1", "web_search", '{"q": "x"}', server_side=True)
    messages = (
        Message("user", (TextPart("look it up"),)),
        Message("assistant", (search, ToolResultPart("s1", "results"), TextPart("found"))),
    )
    sk = build(Run("t", messages), ESTIMATORS["chars4"])
    assert sk.answers[1] == 1 and sk.tool_names[1] == "web_search"


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=2, max_value=50), st.data())
def test_finished_then_fed_more_it_equals_a_build_of_the_longer_run(steps, data):
    run = long_run(steps, seed=steps + 1)
    cut = data.draw(st.integers(min_value=0, max_value=len(run.messages)))
    builder = SkeletonBuilder(FAST[:1])
    builder.add(run.messages[:cut])
    shorter = replace(run, messages=run.messages[:cut])
    assert builder.finish(shorter) == {FAST[0].name: build(shorter, FAST[0])}
    builder.add(run.messages[cut:])
    assert builder.finish(run) == {FAST[0].name: build(run, FAST[0])}


@settings(max_examples=60, deadline=None)
@given(histories(max_rounds=12), st.data())
def test_its_requests_are_the_models_request_bounds_at_every_length(run, data):
    builder = SkeletonBuilder([ESTIMATORS["chars4"]])
    size = 0
    while size < len(run.messages):
        more = data.draw(st.integers(1, 5))
        builder.add(run.messages[size : size + more])
        size = min(size + more, len(run.messages))
        sk = builder.finish(replace(run, messages=run.messages[:size]))["chars4"]
        bounds = request_bounds([m.role for m in run.messages[:size]])
        assert sk.ends == tuple(e for e, _ in bounds)
        assert sk.responses == tuple(r for _, r in bounds)
        assert sk.usage == tuple(None if r is None else run.messages[r].usage for _, r in bounds)


RESULT_TEXTS = st.sampled_from(
    [
        "short output",
        "один результат 结果",
        "\n".join(f"line {i} of a long file" for i in range(40)),  # previewed: cut
        "[REDACTED_OUTPUT len=5000 sha=ab12]",  # counted as 5,000 characters, not previewed
        "",
    ]
)


@st.composite
def result_messages(draw: st.DrawFn) -> Message:
    """A message of tool results, sometimes with a text part beside them."""
    parts: list[TextPart | ToolResultPart] = [
        ToolResultPart(f"c{i}", draw(RESULT_TEXTS)) for i in range(draw(st.integers(1, 3)))
    ]
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), TextPart("and a note " * 9))
    return Message(draw(st.sampled_from(["user", "tool"])), tuple(parts))


@settings(max_examples=80, deadline=None)
@given(st.lists(result_messages(), min_size=1, max_size=6))
def test_preview_tokens_are_the_previews_counted_plus_the_message_overhead(messages):
    run = Run("r", tuple(messages))
    estimators = [*FAST, ESTIMATORS["calibrated-cl100k"]]
    builder = SkeletonBuilder(estimators)
    builder.add(run.messages)
    built = builder.finish(run)
    for e in estimators:
        expected = tuple(
            MESSAGE_OVERHEAD + sum(e.count(preview_text(r.text)) for r in m.tool_results)
            for m in messages
        )
        assert built[e.name].preview_tokens == expected
