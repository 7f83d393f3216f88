"""SWE-agent's `last_n_observations`, rule by rule on small hand-made runs."""

from __future__ import annotations

from tests.engine.hand_made import (
    results_letters,
    rounds,
    sim,
    task,
)


def test_swe_agent_keeps_the_task_and_the_newest_n_observations():
    s = sim("swe_agent_last_n", task(*rounds(8)), n=5)
    # Request 8 sees 9 observations, the task first (SWE-agent counts it as observation
    # 0 and never elides it): the newest 5 tool outputs stay, the 3 before are elided,
    # total - n - 1 as SWE-agent's own tests expect.
    assert results_letters(s, 8) == "ccckkkkk"
    assert s.dispositions(8)[1] == "k"  # the task
    assert [results_letters(s, k).count("c") for k in range(9)] == [0] * 6 + [1, 2, 3]
    assert s.records[8].stage == "clear"


def test_swe_agent_polling_moves_the_boundary_in_steps_so_the_prefix_stays_cached():
    s = sim("swe_agent_last_n", task(*rounds(12)), n=2, polling=3)
    elided = [results_letters(s, k).count("c") for k in range(13)]
    # Request k sees k + 1 observations (the task and k outputs); the boundary is at
    # ((k + 1) // 3) * 3 - 2 and the task is never elided.
    assert elided == [0, 0, 0, 0, 0, 3, 3, 3, 6, 6, 6, 9, 9]
    stable = [s.records[k].cached for k in (7, 8)]
    assert all(c > 0 for c in stable)
