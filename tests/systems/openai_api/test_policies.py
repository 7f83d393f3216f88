"""The Responses API's `truncation: "auto"` and server-side compaction, rule by rule on
small hand-made runs and as invariants over random ones (chars4: a result of 4,000
characters is 1,004 tokens with the message overhead)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.cuts import violations
from contextsim.engine.simulate import Simulation, simulate
from contextsim.model import Message, Run, TextPart
from contextsim.registry import POLICIES
from contextsim.systems.openai_api.policies import CompactionParams, TruncationParams
from contextsim.truth.reconcile import Reconciliation
from tests.engine.hand_made import rounds, user
from tests.engine.histories import histories

EST = ESTIMATORS["chars4"]
SYSTEM = Message("system", (TextPart("be brief " * 50),))


def run_of(count: int = 8, chars: int = 4_000) -> Run:
    return Run(
        "r", (SYSTEM, user(), *rounds(count, chars), Message("assistant", (TextPart("ok"),)))
    )


def truncated(
    run: Run, hard_limit: int, reconcile: Reconciliation | None = None, **params: Any
) -> Simulation:
    return simulate(
        build(run, EST),
        POLICIES["openai_truncation_auto"],
        TruncationParams(**params),
        budget=hard_limit,
        hard_limit=hard_limit,
        count=EST.count,
        reconcile=reconcile,
    )


def compacted(run: Run, reconcile: Reconciliation | None = None, **params: Any) -> Simulation:
    return simulate(
        build(run, EST),
        POLICIES["openai_compaction"],
        CompactionParams(**params),
        budget=10**7,
        hard_limit=10**8,
        count=EST.count,
        reconcile=reconcile,
    )


def full(sk: Skeleton, end: int) -> int:
    return sum(sk.tokens[:end])


def test_truncation_sends_everything_while_the_request_fits_the_window():
    run = run_of()
    sk = build(run, EST)
    s = truncated(run, full(sk, sk.size))
    assert all(set(s.dispositions(r.step)) == {"k"} for r in s.records)


def test_truncation_drops_the_fewest_oldest_items_that_make_the_request_fit():
    run = run_of()
    sk = build(run, EST)
    limit = full(sk, sk.size) // 2
    s = truncated(run, limit)
    last = s.records[-1]
    letters = s.dispositions(last.step)
    cut = letters.index("k", 1)
    # The instructions (system prompt) stay, then one run of dropped items, then the rest.
    assert letters == "k" + "t" * (cut - 1) + "k" * (last.end - cut)
    assert last.sent == sk.tokens[0] + sum(sk.tokens[cut : last.end]) <= limit
    # Keeping the newest dropped item too (with its call, a whole round) would not fit.
    assert sk.tokens[0] + sum(sk.tokens[cut - 2 : last.end]) > limit
    assert last.stage == "trim" and not last.rejected


def test_truncation_drops_the_first_user_message_like_any_other_item():
    s = truncated(run_of(), 5_000)
    assert s.dispositions(len(s.records) - 1)[:2] == "kt"


def test_truncation_decides_on_the_providers_count_not_the_estimate():
    run = run_of()
    sk = build(run, EST)
    limit = full(sk, sk.size) + 100
    assert set(truncated(run, limit).dispositions(len(sk.ends) - 1)) == {"k"}
    # 5,000 tokens the log does not show (system prompt, tools) push it over.
    s = truncated(run, limit, Reconciliation(1.0, 5_000))
    assert "t" in s.dispositions(len(sk.ends) - 1)
    assert all(r.sent <= limit for r in s.records)


def test_reserved_output_makes_truncation_begin_earlier():
    run = run_of()
    sk = build(run, EST)
    limit = full(sk, sk.size) + 100
    s = truncated(run, limit, reserved_output=3_000)
    assert "t" in s.dispositions(len(sk.ends) - 1)
    assert all(r.sent <= limit - 3_000 for r in s.records)


def test_a_request_whose_newest_item_alone_is_over_the_window_is_rejected():
    run = Run("r", (SYSTEM, user(), Message("user", (TextPart("x" * 40_000),))))
    s = truncated(run, 5_000)
    assert s.records[-1].rejected


@settings(max_examples=80, deadline=None)
@given(histories(), st.integers(2_000, 400_000))
def test_truncation_fits_every_request_whose_newest_round_fits(run, limit):
    sk = build(run, EST)
    s = truncated(run, limit)
    head = 1 if sk.roles[0] == "system" else 0
    candidates = list(range(head + 1, sk.size))
    unsafe = dict(zip(candidates, violations(sk, candidates), strict=True))
    for r in s.records:
        safe = [c for c in candidates if c < r.end and unsafe[c] >= r.end]
        # The newest safe cut leaves the smallest request; without one nothing can go.
        smallest = (
            full(sk, head) + full(sk, r.end) - full(sk, safe[-1]) if safe else full(sk, r.end)
        )
        if smallest <= limit:
            assert r.sent <= limit, (r.step, r.sent, smallest)
        letters = s.dispositions(r.step)
        assert letters[:head] == "k" * head
        assert "t" not in letters[head:].lstrip("t")  # one run of the oldest items


def test_compaction_sends_everything_up_to_the_threshold():
    run = run_of()
    sk = build(run, EST)
    s = compacted(run, compact_threshold=full(sk, sk.size))
    assert all(set(s.dispositions(r.step)) == {"k"} for r in s.records)


def test_the_request_that_crosses_the_threshold_is_answered_from_the_compaction_item():
    run = run_of()
    sk = build(run, EST)
    threshold = 4_000
    s = compacted(run, compact_threshold=threshold, compacted_tokens=700)
    first = next(r for r in s.records if full(sk, r.end) > threshold)
    before = s.records[first.step - 1]
    assert set(s.dispositions(before.step)) == {"k"}
    assert s.dispositions(first.step) == "k" + "s" * (first.end - 1)
    assert first.sent == sk.tokens[0] + 700 and first.stage == "summarize"
    # The next request: the instructions, the item, and what came after it.
    after = s.records[first.step + 1]
    assert after.sent == sk.tokens[0] + 700 + sum(sk.tokens[first.end : after.end])


def test_a_second_compaction_folds_the_first_item_into_the_new_one():
    run = run_of(count=12)
    sk = build(run, EST)
    s = compacted(run, compact_threshold=4_000, compacted_tokens=700)
    points = [r.step for r in s.records if r.plan.gap_end == r.end and r.plan.gap_kind == "s"]
    assert len(points) >= 2
    second = s.records[points[1]]
    assert second.sent == sk.tokens[0] + 700
    assert s.dispositions(second.step) == "k" + "s" * (second.end - 1)


def test_a_request_exactly_at_the_threshold_is_not_compacted():
    run = run_of()
    sk = build(run, EST)
    end = sk.ends[3]
    s = compacted(run, compact_threshold=full(sk, end))
    assert set(s.dispositions(3)) == {"k"}
    assert "s" in s.dispositions(4)


def test_compaction_decides_on_the_providers_count():
    run = run_of()
    sk = build(run, EST)
    threshold = full(sk, sk.size)
    s = compacted(run, Reconciliation(1.0, 3_000), compact_threshold=threshold)
    assert "s" in s.dispositions(len(sk.ends) - 1)


@settings(max_examples=80, deadline=None)
@given(histories(), st.integers(1_000, 300_000), st.integers(0, 5_000))
def test_no_request_over_the_threshold_goes_out_uncompacted(run, threshold, item):
    sk = build(run, EST)
    s = compacted(run, compact_threshold=threshold, compacted_tokens=item)
    head = 1 if sk.roles[0] == "system" else 0
    boundary = 0
    for r in s.records:
        assert r.plan.gap_end >= boundary  # the item only ever takes in more
        boundary = r.plan.gap_end
        if r.plan.gap_end == r.end and r.end > head:
            assert r.sent == full(sk, head) + item  # compacted here
        else:
            assert r.sent <= threshold


def test_compaction_items_are_counted_as_summaries_not_as_kept_messages():
    run = run_of()
    s = compacted(run, compact_threshold=3_000, compacted_tokens=500)
    step = next(r.step for r in s.records if r.stage == "summarize")
    assert s.composition(step)["summary"] == 500
