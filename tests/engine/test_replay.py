"""A live run's replay is extended, not made again: a skeleton grown by more messages
(contextsim.counting.memory.grown) replays, fits, simulates and shows problems exactly as one
built afresh."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.analysis import problems
from contextsim.analysis.problems import detect
from contextsim.counting.builder import SkeletonBuilder, build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.counting.memory import earlier
from contextsim.engine.replay import replay_log, usage_costs
from contextsim.engine.simulate import REPLAY, reconcile_skeleton, simulate
from contextsim.model import Compaction, Message, Run, TextPart, Usage
from contextsim.registry import POLICIES
from contextsim.truth.costs import PRESETS
from tests.engine.histories import histories

EST = ESTIMATORS["chars4"]


@st.composite
def measured_histories(draw: st.DrawFn) -> Run:
    """A history whose assistant messages mostly carry usage, with a few logged
    compactions."""
    run = draw(histories(max_rounds=20))
    messages = []
    for i, message in enumerate(run.messages):
        if message.role == "assistant" and draw(st.integers(0, 4)):
            message = replace(message, usage=Usage(1_000 + 37 * i + draw(st.integers(0, 900))))
        messages.append(message)
    marks = draw(st.lists(st.integers(1, max(len(messages) - 1, 1)), max_size=3, unique=True))
    compactions = tuple(Compaction(b) for b in sorted(marks))
    return replace(run, messages=tuple(messages), compactions=compactions)


def _facts(run: Run, size: int, lag: int = 0) -> Run:
    """The run as it stood with `size` messages: what a live run's view passes. A
    compaction may be learnt `lag` messages after the message it comes before (a
    harness that writes its record late)."""
    return replace(
        run,
        messages=run.messages[:size],
        compactions=tuple(c for c in run.compactions if c.before_message + lag < size),
    )


def _views(sk):
    rec = reconcile_skeleton(sk)
    sim = simulate(
        sk, POLICIES[REPLAY], budget=50_000, hard_limit=80_000, count=EST.count, reconcile=rec
    )
    kinds = [sim.kept_by_kind(k) for k in range(len(sim.records))]
    # A small budget too, so that requests are over it and underestimated.
    tight = simulate(
        sk, POLICIES[REPLAY], budget=1_500, hard_limit=3_000, count=EST.count, reconcile=rec
    )
    problems = detect(sim), detect(tight)
    return replay_log(sk), usage_costs(sk, PRESETS["anthropic"]), rec, sim.records, kinds, problems


@settings(max_examples=80, deadline=None)
@given(
    measured_histories(),
    st.lists(st.integers(1, 6), min_size=1, max_size=12),
    st.sampled_from([0, 0, 3]),
)
def test_a_grown_skeleton_replays_as_one_built_afresh(run, steps, lag):
    growing = SkeletonBuilder([EST])
    size = 0
    extended = 0
    kept = []  # the views' cache keeps the skeletons of earlier revisions alive
    for step in steps:
        if size >= len(run.messages):
            break
        growing.add(run.messages[size : size + step])
        size = min(size + step, len(run.messages))
        grown = growing.finish(_facts(run, size, lag))[EST.name]
        fresh_builder = SkeletonBuilder([EST])
        fresh_builder.add(run.messages[:size])
        fresh = fresh_builder.finish(_facts(run, size, lag))[EST.name]
        assert grown == fresh
        ours, theirs = _views(grown), _views(fresh)
        assert ours == theirs
        extended += earlier(grown, "replay_log") is not None
        kept.append(grown)
    assert extended == len(kept) - 1  # each later skeleton found the log it grew from


def test_a_skeleton_grown_by_one_request_works_out_only_that_request():
    run = Run(
        "r",
        tuple(
            replace(m, usage=Usage(100 + i)) if m.role == "assistant" else m
            for i, m in enumerate(_plain_run(400).messages)
        ),
    )
    growing = SkeletonBuilder([EST])
    growing.add(run.messages[:-2])
    first = growing.finish(_facts(run, len(run.messages) - 2))[EST.name]
    before = replay_log(first)
    growing.add(run.messages[-2:])
    second = growing.finish(run)[EST.name]
    after = replay_log(second)
    # The same plans, not equal ones: all but the last request of the shorter log are
    # taken over as they were.
    kept = len(before.plans) - 1
    assert all(a is b for a, b in zip(after.plans[:kept], before.plans[:kept], strict=True))
    assert len(after.plans) == len(second.ends) == len(first.ends) + 1


def test_a_grown_skeletons_problems_are_looked_for_only_in_its_new_requests(monkeypatch):
    run = _plain_run(400)
    growing = SkeletonBuilder([EST])
    growing.add(run.messages[:-2])
    first = growing.finish(_facts(run, len(run.messages) - 2))[EST.name]
    growing.add(run.messages[-2:])
    second = growing.finish(run)[EST.name]
    looked_from = []
    real = problems._underestimates

    def watched(sim, reference, start):  # type: ignore[no-untyped-def]
        looked_from.append((len(sim.records), start))
        return real(sim, reference, start)

    monkeypatch.setattr(problems, "_underestimates", watched)
    found = [
        detect(simulate(sk, POLICIES[REPLAY], budget=2_000, hard_limit=3_000, count=EST.count))
        for sk in (first, second)
    ]
    # The first is looked at whole; the second from the request the first left open.
    assert looked_from == [(len(first.ends), 0), (len(second.ends), len(first.ends) - 1)]
    fresh = SkeletonBuilder([EST])
    fresh.add(run.messages)
    alone = fresh.finish(run)[EST.name]
    assert found[1] == detect(
        simulate(alone, POLICIES[REPLAY], budget=2_000, hard_limit=3_000, count=EST.count)
    )
    assert any(p.kind == "over_budget" for p in found[1])


def _plain_run(n: int) -> Run:
    return Run(
        "plain",
        tuple(
            Message("user" if i % 2 == 0 else "assistant", (TextPart(f"message {i} " * 20),))
            for i in range(n)
        ),
    )


@settings(max_examples=80, deadline=None)
@given(measured_histories(), st.booleans(), st.integers(1, 60_000))
def test_the_replay_made_a_column_at_a_time_is_the_per_step_one(run, reconciled, budget):
    from contextsim.engine.accounting import Accountant
    from contextsim.engine.policy import plain_accounts
    from contextsim.engine.simulate import _Config, _records

    sk = build(run, EST)
    rec = reconcile_skeleton(sk) if reconciled else None
    sim = simulate(
        sk, POLICIES[REPLAY], budget=budget, hard_limit=2 * budget, count=EST.count, reconcile=rec
    )
    log = replay_log(sk)
    acct: Accountant = plain_accounts(sk)[1]
    per_step = _records(
        sk,
        zip(log.plans, log.estimated, log.cached, strict=True),
        0,
        _Config(budget, 2 * budget, PRESETS["anthropic"], rec, acct.raw),
        usage_costs(sk, PRESETS["anthropic"]),
    )
    assert sim.records == tuple(per_step)
