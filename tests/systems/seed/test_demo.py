"""The demo runs: the seed incidents, reproduced deterministically with measured usage.

Most tests build the demos with short chapters for speed; the tests of the seed's
figures build them at the default 100,000 characters per chapter.
"""

from __future__ import annotations

import pytest

from contextsim.counting.estimators import (
    ESTIMATORS,
    MESSAGE_OVERHEAD,
    count_message,
    count_parts,
)
from contextsim.model import Run, steps, tool_rounds, user_turns
from contextsim.systems.seed.demo import (
    BUDGET,
    CHAPTERS_PER_SUBAGENT,
    DEMOS,
    HARD_LIMIT,
    all_demo_runs,
    demo_runs,
)
from contextsim.systems.seed.demo.text import chapter_text

SMALL = 2_000
O200K = ESTIMATORS["o200k"]


@pytest.fixture(scope="module")
def small_runs() -> tuple[Run, ...]:
    return all_demo_runs(chapter_chars=SMALL)


@pytest.fixture(scope="module")
def full_subagents() -> tuple[Run, ...]:
    return demo_runs("subagents")


def by_session(runs: tuple[Run, ...], session_id: str) -> Run:
    return next(r for r in runs if r.session_id == session_id)


def peak_measured(run: Run) -> int:
    return max(m.usage.context for m in run.messages if m.usage is not None)


def chapter_calls(run: Run) -> list[str]:
    return [c.arguments for m in run.messages for c in m.tool_calls if c.name == "read_file"]


def test_building_twice_gives_equal_runs(small_runs: tuple[Run, ...]) -> None:
    assert all_demo_runs(chapter_chars=SMALL) == small_runs


def test_all_demo_runs_lists_main_then_the_8_subagents_then_early_stop(
    small_runs: tuple[Run, ...],
) -> None:
    assert [r.session_id for r in small_runs] == [
        "demo-main",
        *(f"demo-subagent-{i}" for i in range(1, 9)),
        "demo-early-stop",
    ]
    assert set(DEMOS) == {"main", "subagents", "early-stop"}


def test_every_run_names_its_model_format_and_a_readable_title(
    small_runs: tuple[Run, ...],
) -> None:
    assert {(r.model, r.format) for r in small_runs} == {("claude-sonnet-4-5", "demo")}
    assert small_runs[3].title == "Subagent 3/8: read chapters 81\u2013120"


def test_an_unknown_demo_name_is_refused_with_the_known_names() -> None:
    with pytest.raises(KeyError, match="early-stop"):
        demo_runs("nope")


def test_each_subagent_is_told_once_and_reads_40_chapters_one_round_each(
    small_runs: tuple[Run, ...],
) -> None:
    subagents = small_runs[1:9]
    for index, run in enumerate(subagents, start=1):
        assert run.subagent and run.parent_session_id == "demo-main"
        assert run.messages[0].role == "system"
        assert len(user_turns(run)) == 1
        rounds = tool_rounds(run)
        assert len(rounds) == CHAPTERS_PER_SUBAGENT
        assert all(r.complete and len(run.messages[r.call].tool_calls) == 1 for r in rounds)
        first = (index - 1) * CHAPTERS_PER_SUBAGENT + 1
        assert chapter_calls(run)[0] == f'{{"path": "book/chapters/{first:03d}.md"}}'
        last = run.messages[-1]
        assert last.role == "assistant" and not last.tool_calls and last.text


def test_chapters_differ_so_their_results_hash_differently(
    small_runs: tuple[Run, ...],
) -> None:
    texts = [r.text for run in small_runs[1:9] for m in run.messages for r in m.tool_results]
    assert len(texts) == 320
    assert len(set(texts)) == 320


def test_a_default_chapter_measures_like_the_seed_russian_chapter() -> None:
    chapter = chapter_text(1, 100_000)
    assert 100_000 <= len(chapter) < 101_000
    assert 40_000 <= O200K.count(chapter) <= 50_000
    assert 24_500 <= ESTIMATORS["chars4"].count(chapter) <= 25_500
    assert 41_000 <= ESTIMATORS["script"].count(chapter) <= 46_000


def test_every_full_size_subagent_grows_past_the_hard_limit(
    full_subagents: tuple[Run, ...],
) -> None:
    assert len(full_subagents) == 8
    assert all(peak_measured(run) > HARD_LIMIT for run in full_subagents)


def test_chars4_thinks_a_subagent_fits_the_budget_while_it_sends_over_600000(
    full_subagents: tuple[Run, ...],
) -> None:
    # The seed: about 640,000 tokens sent while characters / 4 said under 400,000.
    run = full_subagents[0]
    chars4 = ESTIMATORS["chars4"]
    fooled = [
        step
        for step in steps(run)
        if step.usage is not None
        and step.usage.context > 600_000
        and sum(count_message(m, chars4) for m in run.messages[: step.end]) < BUDGET
    ]
    assert fooled


def test_early_stop_ends_after_2_chapters_at_about_100000_tokens_to_save_space() -> None:
    (run,) = demo_runs("early-stop")
    assert run.subagent and run.parent_session_id == "demo-main"
    assert len(user_turns(run)) == 1
    assert len(chapter_calls(run)) == 2
    last = run.messages[-1]
    assert last.role == "assistant" and not last.tool_calls
    assert "save space" in last.text
    assert 80_000 <= peak_measured(run) <= 120_000 < BUDGET


def test_main_run_has_several_user_turns_and_several_tools(
    small_runs: tuple[Run, ...],
) -> None:
    main = small_runs[0]
    assert not main.subagent and main.parent_session_id == ""
    assert len(user_turns(main)) >= 3
    names = [c.name for m in main.messages for c in m.tool_calls]
    assert {"read_file", "grep", "run_tests", "task"} <= set(names)
    assert names.count("task") == 9
    assert 10_000 <= peak_measured(main) <= 100_000


def test_main_task_results_are_the_subagents_final_answers(
    small_runs: tuple[Run, ...],
) -> None:
    main, subagents = small_runs[0], small_runs[1:]
    results = [r.text for m in main.messages for r in m.tool_results]
    for run in subagents:
        assert run.messages[-1].text in results


def test_every_tool_result_answers_an_earlier_call_and_every_call_is_answered(
    small_runs: tuple[Run, ...],
) -> None:
    for run in small_runs:
        called: set[str] = set()
        answered: list[str] = []
        for message in run.messages:
            answered += [r.call_id for r in message.tool_results]
            assert set(answered) <= called
            called |= {c.id for c in message.tool_calls}
        assert sorted(answered) == sorted(called)
        assert len(set(answered)) == len(answered)


def test_usage_is_the_o200k_count_of_the_history_and_of_the_answer(
    small_runs: tuple[Run, ...],
) -> None:
    # Counted afresh (no memo) and summed naively, against the builder's prefix sums.
    for run in (small_runs[0], small_runs[1], small_runs[-1]):
        counts = [count_parts(m, O200K) + MESSAGE_OVERHEAD for m in run.messages]
        for i, message in enumerate(run.messages):
            if message.role != "assistant":
                assert message.usage is None
                continue
            assert message.usage is not None
            assert message.usage.input_tokens == sum(counts[:i])
            assert message.usage.output_tokens == counts[i] - MESSAGE_OVERHEAD
            assert message.usage.context == message.usage.input_tokens


def test_tool_call_ids_are_unique_across_all_demo_runs(small_runs: tuple[Run, ...]) -> None:
    ids = [c.id for run in small_runs for m in run.messages for c in m.tool_calls]
    assert len(ids) == len(set(ids))
