"""Everything a simulation found, as every page shows it: its compactions (with the
threshold and window beside them) and its problems with what each cost, the costliest
first. The CLI, the exports and the dashboard all take them from here."""

from __future__ import annotations

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
from contextsim.engine.simulate import Simulation
from contextsim.truth.costs import Prices


def findings(
    sim: Simulation,
    policy: Policy,
    own: Policy | None,
    window: Limit,
    prices: Prices,
    reference: tuple[int, ...] | None = None,
) -> tuple[list[CompactionEvent], list[Problem]]:
    """The simulation's compactions and its problems (each compaction one of them),
    priced and ranked. `policy` is the one simulated, `own` the run's own system's
    compaction policy (registry.own_trigger), `window` the hard limit and its source,
    `reference` as in problems.detect."""
    threshold = compaction_threshold(policy, sim.params, own, sim.skeleton)
    events = compaction_events(sim, threshold, window)
    found = [*detect(sim, reference=reference), *map(event_problem, events)]
    return events, ranked(found, sim, prices)
