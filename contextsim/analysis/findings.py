"""Everything a simulation found, as every page shows it: its compactions (with the
threshold and window beside them) and its problems with what each cost, the costliest
first. The CLI, the exports and the dashboard all take them from here."""

from __future__ import annotations

from collections.abc import Sequence

from contextsim.analysis.compactions import (
    CompactionEvent,
    Limit,
    compaction_events,
    compaction_threshold,
    event_problem,
)
from contextsim.analysis.impact import ranked
from contextsim.analysis.problems import Problem, detect
from contextsim.engine.policy import Policy
from contextsim.engine.simulate import REPLAY, Simulation
from contextsim.model import Rejection
from contextsim.truth.costs import Prices


def findings(
    sim: Simulation,
    policy: Policy,
    own: Policy | None,
    window: Limit,
    prices: Prices,
    reference: tuple[int, ...] | None = None,
    refused: Sequence[Rejection] = (),
) -> tuple[list[CompactionEvent], list[Problem]]:
    """The simulation's compactions and its problems (each compaction one of them),
    priced and ranked. `policy` is the one simulated, `own` the run's own system's
    compaction policy (registry.own_trigger), `window` the hard limit and its source,
    `reference` as in problems.detect; `refused`: the requests the log says the
    provider refused (model.Run.rejections), each a problem of what was sent (under
    as_logged; a what-if sends other requests)."""
    threshold = compaction_threshold(policy, sim.params, own, sim.skeleton)
    events = compaction_events(sim, threshold, window)
    found = [*detect(sim, reference=reference), *map(event_problem, events)]
    if sim.policy == REPLAY:
        found += refusals(sim, refused)
    return events, ranked(found, sim, prices)


def refusals(sim: Simulation, refused: Sequence[Rejection]) -> list[Problem]:
    """A problem at each request the provider refused, as the log records it: the
    request answered by the agent's note of the error (or, without one, the request
    whose history ends there)."""
    sk = sim.skeleton
    at = {r: k for k, r in enumerate(sk.responses) if r is not None}
    ends = {e: k for k, e in enumerate(sk.ends)}
    out = []
    for r in refused:
        step = at.get(r.before_message, ends.get(r.before_message))
        if step is None or step >= len(sim.records):
            continue
        why = "for its size: it did not fit the window" if r.overflow else "as the log says"
        detail = f"the provider refused this request {why} ({r.reason})"
        out.append(Problem(step, "refused", "error" if r.overflow else "warning", detail))
    return out
