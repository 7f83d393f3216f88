"""Each problem detector on a small run built for it."""

from __future__ import annotations

from contextsim.analysis.problems import detect
from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import simulate
from contextsim.model import (
    Compaction,
    Message,
    Run,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from contextsim.registry import POLICIES

EST = ESTIMATORS["chars4"]


def rounds(n, size=400, *, same=False, error=False, usage=None):
    out = []
    for i in range(n):
        args = "{}" if same else f'{{"i": {i}}}'
        u = usage(i) if usage else None
        out.append(Message("assistant", (ToolCallPart(f"c{i}", "read", args),), u))
        text = "x" * size if same else f"{i} " + "x" * size
        out.append(Message("tool", (ToolResultPart(f"c{i}", text, error),)))
    return out


def run_of(*messages, **kw):
    return Run("r", (Message("user", (TextPart("task"),)), *messages), **kw)


def problems(run, policy="mythex", budget=10_000, hard=30_000, **kw):
    sim = simulate(
        build(run, EST), POLICIES[policy], budget=budget, hard_limit=hard, count=EST.count
    )
    return detect(sim, **kw)


def kinds(found):
    return {p.kind for p in found}


def test_rejected_and_over_budget_name_the_limits():
    found = problems(run_of(*rounds(40, 4_000)), "none", budget=10_000, hard=30_000)
    rejected = [p for p in found if p.kind == "rejected"]
    assert (
        rejected and rejected[0].severity == "error" and "30,000 hard limit" in rejected[0].detail
    )
    assert any(p.kind == "over_budget" for p in found)


def test_oversized_result_is_flagged_where_it_first_appears():
    found = problems(run_of(*rounds(2, 48_000)), budget=40_000, hard=100_000)
    flagged = [p for p in found if p.kind == "oversized_result"]
    assert [p.step for p in flagged] == [1, 2]


def test_repeated_call_and_no_progress():
    found = problems(run_of(*rounds(5, 40, same=True)), budget=100_000, hard=200_000)
    assert [p.step for p in found if p.kind == "repeated_call"] == [2, 3, 4, 5]
    assert [p.step for p in found if p.kind == "no_progress"] == [4]


def test_errors_count_as_no_progress():
    found = problems(run_of(*rounds(3, 40, error=True)), budget=100_000, hard=200_000)
    assert [p.step for p in found if p.kind == "no_progress"] == [3]


def test_early_stop_when_the_last_answer_speaks_of_saving_space():
    stop = Message("assistant", (TextPart("I will stop here to save space in the context."),))
    found = problems(run_of(*rounds(2), stop), budget=400_000, hard=1_000_000)
    (early,) = [p for p in found if p.kind == "early_stop"]
    assert early.severity == "warning" and early.step == 2


def test_step_ceiling_after_a_round_number_of_steps_without_an_answer():
    found = problems(run_of(*rounds(20)), budget=400_000, hard=1_000_000, typical_steps=12)
    (ceiling,) = [p for p in found if p.kind == "step_ceiling"]
    assert "exactly 20 steps" in ceiling.detail and "ceiling of 30" in ceiling.detail
    done = Message("assistant", (TextPart("done"),))
    assert "step_ceiling" not in kinds(problems(run_of(*rounds(19), done), budget=400_000))


def test_compaction_that_did_not_shrink_the_context_is_flagged():
    grow = rounds(4, usage=lambda i: Usage(1_000 * (i + 1)))
    run = run_of(*grow, compactions=(Compaction(5, 3_000),))
    (flag,) = [p for p in problems(run, budget=400_000) if p.kind == "compaction"]
    assert "3,000 tokens before, 4,000 after" in flag.detail
    shrink = rounds(4, usage=lambda i: Usage(1_000 if i == 3 else 5_000))
    assert "compaction" not in kinds(problems(run_of(*shrink, compactions=(Compaction(5),))))


def test_cache_break_when_clearing_one_result_at_a_time():
    from contextsim.systems.seed.policies import MythexParams

    run = run_of(*rounds(30, 1_000))
    sk = build(run, EST)
    one = simulate(
        sk,
        POLICIES["mythex"],
        MythexParams(batch=1),
        budget=4_000,
        hard_limit=40_000,
        count=EST.count,
    )
    four = simulate(sk, POLICIES["mythex"], budget=4_000, hard_limit=40_000, count=EST.count)
    breaks_one = [p for p in detect(one) if p.kind == "cache_break"]
    breaks_four = [p for p in detect(four) if p.kind == "cache_break"]
    assert len(breaks_four) < len(breaks_one)


def test_underestimate_uses_the_reference_when_nothing_was_measured():
    run = run_of(*rounds(3, 2_000))
    sk = build(run, EST)
    sim = simulate(sk, POLICIES["none"], budget=1_600, hard_limit=10_000, count=EST.count)
    reference = tuple(t * 2 for t in sk.tokens)
    flagged = [p for p in detect(sim, reference=reference) if p.kind == "underestimate"]
    assert flagged and "the reference tokenizer" in flagged[0].detail


def test_a_subagent_that_ends_with_a_full_answer_is_not_flagged_but_a_terse_one_is():
    from contextsim.engine.simulate import simulate_run

    def ending(answer: str) -> list[str]:
        run = Run(
            "sub",
            (
                Message("user", (TextPart("read the files"),)),
                Message("assistant", (TextPart(answer),)),
            ),
            subagent=True,
        )
        sim = simulate_run(
            run, ESTIMATORS["chars4"], POLICIES["none"], budget=400_000, hard_limit=10**6
        )
        return [p.kind for p in detect(sim)]

    assert "early_stop" in ending("Done.")
    assert "early_stop" not in ending("Here is what I found in every file. " * 40)


def test_a_real_cache_miss_is_a_cache_break_at_its_step_under_as_logged():
    reads = [0, 900, 1_900, 200, 3_100]  # the provider's cache read fell at step 3

    def usage(i):
        return Usage(100, cache_read=reads[i], cache_write=1_000, output_tokens=10)

    run = run_of(*rounds(5, usage=usage))
    found = [p for p in problems(run, "as_logged") if p.kind == "cache_break"]
    assert [p.step for p in found] == [3]
    assert (
        "measured" in found[0].detail and "2,700 tokens written again" in found[0].detail
    )  # 1,900 + 1,000 - 200
    assert not [p for p in problems(run, "none") if "measured" in p.detail]


def test_an_underestimate_names_the_unlogged_part_or_the_estimator_as_its_cause():
    from contextsim.truth.reconcile import Reconciliation

    run = run_of(*rounds(3, size=4_000))
    sk = build(run, EST)

    def causes(rec):
        sim = simulate(
            sk, POLICIES["none"], budget=5_000, hard_limit=100_000, count=EST.count, reconcile=rec
        )
        return [p.detail for p in detect(sim) if p.kind == "underestimate"]

    assert all("mostly the unlogged part" in d for d in causes(Reconciliation(1.0, 8_000)))
    assert all("mostly the estimator" in d for d in causes(Reconciliation(3.0, 0)))
    assert causes(Reconciliation(1.0, 8_000)) and causes(Reconciliation(1.0, 0)) == []


def test_a_request_the_provider_refused_is_a_problem_of_what_was_sent():
    from pathlib import Path

    from contextsim.analysis.compactions import Limit
    from contextsim.analysis.findings import findings
    from contextsim.counting.builder import build
    from contextsim.counting.estimators import ESTIMATORS
    from contextsim.engine.simulate import simulate
    from contextsim.ingest.detect import parse_path
    from contextsim.registry import POLICIES
    from contextsim.truth.costs import PRESETS

    fixture = Path(__file__).parents[1] / "systems/claude_code/fixtures/api_errors.jsonl"
    (run,) = parse_path(str(fixture)).runs
    est = ESTIMATORS["chars4"]
    sk = build(run, est)
    found = {}
    for name in ("as_logged", "none"):
        sim = simulate(sk, POLICIES[name], None, budget=10**6, hard_limit=10**6, count=est.count)
        limit = Limit(10**6, "test")
        _, problems = findings(
            sim, POLICIES[name], None, limit, PRESETS["anthropic"], None, run.rejections
        )
        found[name] = [p for p in problems if p.kind == "refused"]
    # Each at the request the error line answers; the one refused for its size an error.
    steps = [sk.responses.index(r.before_message) for r in run.rejections]
    assert sorted(p.step for p in found["as_logged"]) == steps
    severities = {p.step: p.severity for p in found["as_logged"]}
    assert [severities[s] for s in steps] == ["error", "warning"]
    assert found["none"] == []  # a what-if sends other requests
