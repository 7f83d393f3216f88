"""The parameter search (contextsim.analysis.tuning): on generated runs and on the
corpus it finds every grid point's outcome as the exhaustive grid does, with far fewer
simulations; the risk it counts is the log's repeated calls whose earlier result the
setting had removed."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.analysis.outcomes import (
    NOTHING,
    Outcome,
    figures_of,
    outcome,
    outcome_of,
    removed_then_asked,
    total_of,
)
from contextsim.analysis.tuning import Dimension, exhaustive, policy_mechanism, search
from contextsim.cli.tune import prepare, simulated
from contextsim.counting.builder import build
from contextsim.counting.estimators import DEFAULT, ESTIMATORS
from contextsim.engine.simulate import simulate
from contextsim.ingest.detect import parse_path
from contextsim.model import (
    Message,
    Run,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpecPart,
    Usage,
)
from contextsim.registry import EVERY_MECHANISM, POLICIES
from contextsim.truth.costs import PRESETS
from tests.conftest import corpus_root

EST = ESTIMATORS["chars4"]
HARD_LIMIT = 60_000


def evaluator(runs, policy: str, hard_limit: int = HARD_LIMIT, defers=None):
    """Simulates run n at a setting: the policy's parameters, or for a mechanism that
    defers tools (`defers`), the policy at its defaults with the setting's deferral."""
    skeletons = [build(r, EST) for r in runs]
    chosen = POLICIES[policy]

    def evaluate(n, values):
        params = dataclasses.replace(chosen.Params(), **values) if defers is None else None
        deferral = defers(values, skeletons[n], hard_limit) if defers is not None else None
        sim = simulate(
            skeletons[n],
            chosen,
            params,
            budget=hard_limit,
            hard_limit=hard_limit,
            count=EST.count,
            prices=PRESETS["anthropic"],
            deferral=deferral,
        )
        return outcome(sim)

    return evaluate


def tool_run(sizes: list[int], repeats: list[int], measured: bool = True) -> Run:
    """A run of tool calls with results of `sizes` characters; the calls at `repeats`
    ask again what an earlier call asked (same name and arguments). `measured`: each
    response carries a small measured usage (a policy that trusts measured sizes then
    sees small requests); else none, and sizes are the estimator's."""
    messages: list[Message] = [Message("user", (TextPart("start " * 50),))]
    for n, size in enumerate(sizes):
        arg = n if n not in repeats or n == 0 else repeats.index(n) % max(n, 1)
        call = ToolCallPart(f"c{n}", "Read", f'{{"file": {arg}}}')
        usage = Usage(200 + 10 * n, 0, 0, 50) if measured else None
        messages.append(Message("assistant", (call,), usage=usage))
        messages.append(Message("tool", (ToolResultPart(f"c{n}", "x" * size),)))
    messages.append(Message("assistant", (TextPart("done"),)))
    return Run("generated", tuple(messages))


CLEARING = [
    Dimension("trigger", (5_000, 10_000, 15_000, 20_000, 30_000, 40_000, 50_000, 60_000)),
    Dimension("keep", (1, 2, 3, 4, 6, 8)),
    Dimension("clear_tool_inputs", (False, True), ordered=False),
]


@settings(max_examples=25, deadline=None)
@given(
    runs=st.lists(
        st.tuples(
            st.lists(st.integers(100, 12_000), min_size=3, max_size=30),
            st.lists(st.integers(0, 29), max_size=5),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_the_search_finds_what_the_grid_finds(runs):
    built = [tool_run(sizes, repeats) for sizes, repeats in runs]
    evaluate = evaluator(built, "anthropic_clear_tool_uses")
    found = search(len(built), CLEARING, evaluate)
    every = exhaustive(len(built), CLEARING, evaluate)
    assert found.totals == every.totals
    assert found.recommended() == every.recommended()
    assert found.frontier() == every.frontier()
    assert found.simulated <= every.simulated


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1_000, 12_000), min_size=8, max_size=40),
    repeats=st.lists(st.integers(0, 39), max_size=5),
)
def test_a_threshold_search_takes_at_most_a_third_of_a_fine_grid(sizes, repeats):
    """On generated runs, a compaction threshold searched from 10% to 90% of what the
    run grows to, every 0.25% of it (as finely as a real setting is set): the
    exhaustive grid's figures at every point, its optimum and frontier, for at most a
    third of its simulations."""
    built = [tool_run(sizes, repeats, measured=False)]
    grows = sum(sizes) // 4  # chars4: tokens of the results the run piles up
    step = max(grows // 400, 1)
    space = [Dimension("threshold", tuple(range(grows // 10, grows * 9 // 10, step)))]
    evaluate = evaluator(built, "claude_code_auto_compact", hard_limit=200_000)
    found = search(1, space, evaluate)
    every = exhaustive(1, space, evaluate)
    assert found.totals == every.totals
    assert found.recommended() == every.recommended()
    assert found.frontier() == every.frontier()
    assert len(set(every.totals.values())) > 1, "no threshold changes anything"
    assert found.simulated * 3 <= every.simulated, (found.simulated, every.simulated)


@pytest.mark.parametrize(
    ("folder", "name"),
    [("claude_code", "claude-code-auto-compact"), ("codex", "codex-auto-compact")],
)
def test_on_the_corpus_the_search_is_the_grid_at_a_third_of_its_cost(folder, name):
    """Each real session of the folder, simulated as `tune` simulates it, over its
    agent's own compaction threshold at the real setting's grid: every point's figures,
    the recommendation and the frontier are the exhaustive grid's, for at most a third
    of its simulations over the folder."""
    paths = sorted((corpus_root() / folder).glob("*.jsonl"))
    if not paths:
        pytest.skip(f"no session in {corpus_root() / folder} (the shared corpus is not here)")
    mechanism = EVERY_MECHANISM[name]
    estimator = ESTIMATORS[DEFAULT]
    simulations = grid = varied = 0
    for path in paths:
        runs = [r for r in parse_path(str(path)).runs if not r.compaction_request]
        for run in runs:
            prepared = prepare(run, runs, estimator)
            space = mechanism.space(prepared.hard_limit)

            def evaluate(n, values, prepared=prepared):
                return outcome(
                    simulated(prepared, mechanism.policy, dict(values), estimator=estimator)
                )

            found = search(1, space, evaluate)
            every = exhaustive(1, space, evaluate)
            assert found.totals == every.totals, path.name
            assert found.recommended() == every.recommended(), path.name
            assert found.frontier() == every.frontier(), path.name
            simulations += found.simulated
            grid += every.simulated
            varied += len(set(every.totals.values())) > 1
    assert varied, "no session whose outcome the threshold changes"
    assert simulations * 3 <= grid, (simulations, grid)


def test_risk_is_a_repeated_call_whose_earlier_result_was_removed():
    sizes = [8_000] * 8
    run = tool_run(sizes, [])
    # The last call asks again what the first asked.
    messages = list(run.messages)
    first_call = messages[1].parts[0]
    last = len(messages) - 3
    messages[last] = Message(
        "assistant",
        (ToolCallPart("again", first_call.name, first_call.arguments),),
        usage=messages[last].usage,
    )
    messages[last + 1] = Message("tool", (ToolResultPart("again", "x" * 8_000),))
    run = dataclasses.replace(run, messages=tuple(messages))
    sk = build(run, EST)
    chosen = POLICIES["anthropic_clear_tool_uses"]
    kept = simulate(
        sk, chosen, chosen.Params(trigger=10**6), budget=10**6, hard_limit=10**6, count=EST.count
    )
    cleared = simulate(
        sk,
        chosen,
        chosen.Params(trigger=10_000, keep=1),
        budget=10**6,
        hard_limit=10**6,
        count=EST.count,
    )
    assert removed_then_asked(kept) == []
    ((step, message),) = removed_then_asked(cleared)
    assert message == 2  # the first result
    assert sk.responses[step] == last  # the request that made the repeated call
    assert outcome(cleared).risk == 1 and outcome(kept).risk == 0


def test_of_settings_that_change_nothing_the_least_intervention_is_recommended():
    # Short runs: no threshold of the grid is ever reached, so every setting costs the
    # same; the recommendation is the highest threshold (it changes least).
    built = [tool_run([500, 600, 700], [])]
    space = [Dimension("threshold", (50_000, 80_000, 120_000))]
    found = search(1, space, evaluator(built, "claude_code_auto_compact", hard_limit=200_000))
    assert len({o.cost for o in found.totals.values()}) == 1
    assert found.setting(found.recommended()) == {"threshold": 120_000}


def turns_run(turns: int, calls: int, size: int, mcp_chars: int = 0) -> Run:
    """User turns of tool calls, each result `size` characters, some calls repeated;
    with `mcp_chars`, the requests define two MCP tools of that many characters in all
    beside Read, and every fifth call is to one of them."""
    messages: list[Message] = [Message("system", (TextPart("You are an agent. " * 20),))]
    if mcp_chars:
        tools = (
            ToolSpecPart("Read", "r" * 800),
            ToolSpecPart("mcp__docs__search", "m" * (mcp_chars // 2)),
            ToolSpecPart("mcp__docs__fetch", "m" * (mcp_chars - mcp_chars // 2)),
        )
        messages.append(Message("system", tools))
    n = 0
    for t in range(turns):
        messages.append(Message("user", (TextPart(f"turn {t} " * 40),)))
        for c in range(calls):
            name = "mcp__docs__search" if mcp_chars and n % 5 == 4 else "Read"
            call = ToolCallPart(f"c{n}", name, f'{{"file": {(n * 7) % 11}}}')
            thought = ThinkingPart("weighing the next file to read " * 30)
            messages.append(Message("assistant", (thought, call)))
            messages.append(Message("tool", (ToolResultPart(f"c{n}", "y" * (size + 97 * c)),)))
            n += 1
        messages.append(Message("assistant", (TextPart(f"done {t}"),)))
    return Run("turns", tuple(messages))


@pytest.mark.parametrize("name", sorted(EVERY_MECHANISM))
def test_every_mechanism_searched_agrees_with_its_grid(name):
    """Each declared mechanism's ordered parameters keep the search's assumption on
    runs of several turns (else the parameter must be declared a choice)."""
    mechanism = EVERY_MECHANISM[name]
    # Claude Code's threshold starts at 40% of the window + 33,000 and Letta's policies
    # act at 90% of the model's window (128,000 for these runs): a window where both
    # leave a range, with runs that reach it.
    window = 150_000
    # MCP definitions of 8% of the window in one run, 3% in the other: tool search's
    # settings (always, past 5%, 10% or 20%, never) then differ.
    mcp = (48_000, 18_000) if mechanism.defers is not None else (0, 0)
    built = [turns_run(4, 6, 27_000, mcp[0]), turns_run(2, 12, 18_000, mcp[1])]
    evaluate = evaluator(built, mechanism.policy, hard_limit=window, defers=mechanism.defers)
    space = mechanism.space(window)
    found = search(len(built), space, evaluate)
    every = exhaustive(len(built), space, evaluate)
    assert len(set(every.totals.values())) > 1, "the runs do not exercise the parameters"
    assert found.totals == every.totals
    assert found.recommended() == every.recommended()
    assert found.simulated <= every.simulated
    if any(d.ordered for d in space):  # choices alone are each simulated
        assert found.simulated < every.simulated


def test_runs_sum_with_the_median_of_their_medians_weighted_by_requests():
    a = Outcome(1.0, 0, 0, 1_000, 300, 10, cached=800, median=100)
    b = Outcome(2.0, 1, 2, 3_000, 900, 30, cached=1_500, median=200)
    c = Outcome(0.5, 0, 0, 500, 100, 5, cached=0, median=50)
    total = total_of([a, b, c])
    assert (total.cost, total.rejected, total.risk) == (3.5, 1, 2)
    assert (total.sent, total.peak, total.requests, total.cached) == (4_500, 900, 45, 2_300)
    assert total.median == 200  # b's 30 requests hold the middle of the 45
    assert total.hit_rate == 2_300 / 4_500
    assert total_of([a]) == a and total_of([]) == NOTHING
    # A result stored before the cache and the median were kept reads them as unknown.
    old = outcome_of([1.0, 0, 0, 1_000, 300, 10])
    assert (old.cached, old.median, old.hit_rate) == (-1, -1, None)
    assert total_of([a, old]).median == -1 and total_of([a, old]).hit_rate is None
    assert outcome_of(figures_of(b)) == b


def _numbers_around_defaults(params_type) -> dict[str, str]:
    """Up to three numeric parameters of a policy, each at half, once and twice its
    default (the values the policy accepts), as --grid takes them."""
    defaults = params_type()
    grid: dict[str, str] = {}
    for f in dataclasses.fields(params_type):
        value = getattr(defaults, f.name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value:
            continue
        accepted = []
        for factor in (0.5, 1, 2):
            x = int(value * factor) if isinstance(value, int) else round(value * factor, 4)
            try:
                params_type(**{f.name: x})
            except ValueError:
                continue
            accepted.append(str(x))
        if len(accepted) > 1:
            grid[f.name] = ",".join(accepted)
        if len(grid) == 3:
            break
    return grid


NUMERIC_POLICIES = sorted(
    n for n in POLICIES if n != "as_logged" and _numbers_around_defaults(POLICIES[n].Params)
)


@pytest.mark.parametrize("name", NUMERIC_POLICIES)
def test_any_policy_searched_over_its_numbers_agrees_with_its_grid(name):
    """Any policy on request (tune --policy): its numeric parameters traced through
    whatever the policy does with them (sizes, counts, shares, a summary's tokens that
    reach the cost) give every grid point the exhaustive grid's figures."""
    chosen = POLICIES[name]
    grid = _numbers_around_defaults(chosen.Params)
    mechanism = policy_mechanism(name, chosen.label, chosen.Params, grid)
    built = [turns_run(4, 6, 27_000, 20_000), turns_run(2, 12, 18_000)]
    evaluate = evaluator(built, name, hard_limit=150_000)
    space = mechanism.space(150_000)
    found = search(len(built), space, evaluate)
    every = exhaustive(len(built), space, evaluate)
    assert found.totals == every.totals
    assert found.recommended() == every.recommended()
    assert found.simulated <= every.simulated
