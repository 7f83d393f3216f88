"""A simulation's columns and running totals: taken over from the run a live run grew
from, they are the ones made afresh and the plain sums over every record."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import reduce
from operator import add

from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.analysis.report import simulation_summary
from contextsim.counting.builder import SkeletonBuilder, build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.columns import _extended, columns, limit_streaks
from contextsim.engine.plan import Plan
from contextsim.engine.simulate import REPLAY, StepRecord, simulate
from contextsim.model import Message, Run, TextPart, Usage
from contextsim.registry import POLICIES

EST = ESTIMATORS["chars4"]
PLAN = Plan(end=0)
FIELDS = (
    "sent",
    "codes",
    "stages",
    "sent_sums",
    "cached_sums",
    "cost_sums",
    "peaks",
    "rejected_sums",
    "over_sums",
    "stage_counts",
    "streaks",
)


@st.composite
def records(draw: st.DrawFn, start: int = 0) -> list[StepRecord]:
    out = []
    for k in range(start, start + draw(st.integers(0, 25))):
        sent = draw(st.integers(0, 1_000))
        rejected = draw(st.booleans())
        out.append(
            StepRecord(
                k,
                k,
                sent,
                sent,
                draw(st.sampled_from(["none", "clear", "trim", "summarize"])),
                rejected or draw(st.booleans()),
                rejected,
                draw(st.integers(0, sent)),
                draw(st.floats(0, 1, allow_nan=False)),
                None,
                PLAN,
            )
        )
    return out


def _walked(codes: list[int], start: int = 0) -> list[tuple[int, int, str]]:
    """The plain walk over every step."""
    out: list[tuple[int, int, str]] = []
    for step in range(start, len(codes)):
        kind = ("", "over_budget", "rejected")[codes[step]]
        if not kind:
            continue
        if out and out[-1][2] == kind and out[-1][1] == step - 1:
            out[-1] = (out[-1][0], step, kind)
        else:
            out.append((step, step, kind))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2), max_size=60), st.integers(0, 70))
def test_limit_streaks_are_the_runs_of_equal_codes(codes, start):
    assert limit_streaks(codes, start) == _walked(codes, start)


@settings(max_examples=300, deadline=None)
@given(records(), st.data(), st.integers(1, 9))
def test_columns_taken_over_are_the_columns_made_afresh(old, data, size):
    keep = data.draw(st.integers(0, len(old)))
    new = tuple(old[:keep] + data.draw(records(keep)))
    before = _extended(None, tuple(old))
    before.bucket_peaks(size)  # as the chart of the view before asked
    grown, fresh = _extended(before, new), _extended(None, new)
    for name in FIELDS:
        assert getattr(grown, name) == getattr(fresh, name), name
    assert list(grown.stage_counts) == list(fresh.stage_counts)  # first shown, first
    # And both are the plain figures over every record.
    assert grown.sent_sums[-1] == sum(r.sent for r in new)
    assert grown.cached_sums[-1] == sum(r.cached for r in new)
    assert grown.cost_sums[-1] == reduce(add, (r.cost for r in new), 0)  # left to right
    assert grown.peaks[-1] == max((r.sent for r in new), default=0)
    assert grown.rejected_sums[-1] == sum(r.rejected for r in new)
    assert grown.over_sums[-1] == sum(r.over_budget for r in new)
    assert grown.stage_counts == dict(Counter(r.stage for r in new))
    codes = [2 if r.rejected else 1 if r.over_budget else 0 for r in new]
    assert grown.streaks == _walked(codes)
    sent = [r.sent for r in new]
    peaks = [
        max(range(a, min(a + size, len(new))), key=sent.__getitem__)
        for a in range(0, len(new), size)
    ]
    assert grown.bucket_peaks(size) == fresh.bucket_peaks(size) == peaks


def _run(n: int) -> Run:
    return Run(
        "growing",
        tuple(
            Message("user", (TextPart(f"message {i} " * (20 + i % 7)),))
            if i % 2 == 0
            else Message("assistant", (TextPart(f"answer {i} " * 9),), Usage(300 + 60 * i))
            for i in range(n)
        ),
    )


def test_a_live_runs_summary_reads_only_its_new_records_and_equals_the_fresh_one():
    run = _run(240)
    growing = SkeletonBuilder([EST])
    alive, taken = [], []
    for size in range(40, 241, 20):
        growing.add(run.messages[size - 20 if size > 40 else 0 : size])
        facts = replace(run, messages=run.messages[:size])
        sk = growing.finish(facts)[EST.name]
        alive.append(sk)  # the views' cache keeps the skeletons of earlier revisions
        # Unreconciled, so a measured response moves no earlier request's size; a
        # budget that the later requests are over, so the streak reaches the end.
        sim = simulate(sk, POLICIES[REPLAY], budget=4_000, hard_limit=9_000, count=EST.count)
        fresh = simulate(
            build(facts, EST), POLICIES[REPLAY], budget=4_000, hard_limit=9_000, count=EST.count
        )
        assert simulation_summary(sim, None, False) == simulation_summary(fresh, None, False)
        taken.append(columns(sim)._inherited[1])
    summary = simulation_summary(sim, None, False)
    assert summary["over_budget_steps"] > 0 and summary["rejected_steps"] > 0
    # Each revision took over all but the request the one before left open.
    assert taken == [0] + [size // 2 - 11 for size in range(60, 241, 20)]
