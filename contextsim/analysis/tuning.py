"""Searching a policy's parameters over a set of runs for the settings that would have
cost least without a request over the limit and without removing what the agent used
again later (issue 35).

The space is a grid: each searched parameter takes one of its values. Exhaustively,
every run would be simulated at every point. The search instead relies on what the
policies are made of: a policy uses a numeric parameter through arithmetic and
comparisons (compact when the request reaches the threshold, keep the newest `keep`
results). So each run is simulated with its numeric parameters as Traced numbers
(contextsim.analysis.traced): they compute exactly what their values compute, and each
comparison also records the range of settings for which it would have gone the same
way. Every grid point in the intersection of those ranges takes every decision the
simulated setting took, so it sends the same requests and has the same Outcome: one
simulation settles it. The search goes through the grid in order and simulates only
the points no earlier simulation settled. A run costs one simulation per distinct
behaviour, however fine the grid: the grid can be as fine as the real setting is.

What needs a parameter's exact value (an index, a slice, a float conversion, a product of
two parameters) pins it: that simulation settles no other value of it. A parameter that
is not numeric (a switch, a name) is a choice: each value is simulated on its own.

What it assumes, said plainly:
- Nothing about the shape of the cost: it is exact on every grid point, and a property
  test checks the traced arithmetic on generated programs, the search against the
  exhaustive grid on generated runs, on every declared mechanism and on the corpus.
  A policy must read its parameters as numbers (a parameter turned into text, or
  handed to code that reads its value without Python's operators, would escape the
  record); the tests are what keep each declared mechanism honest.
- The agent would have sent the same messages whatever the setting (a simulation
  cannot know how it would have behaved with another context): `risk` counts where
  that is least likely to hold, the requests where the agent called a tool again with
  the same arguments although the setting had removed the earlier result.

Everything here is deterministic; no wall clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import product
from typing import Any

from contextsim.analysis.outcomes import (
    FIELDS,
    Outcome,
    measured,
    outcome,
    total_of,
)
from contextsim.analysis.traced import parameters, settle
from contextsim.analysis.tracer import Tracer, region
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.deferral import Deferral
from contextsim.engine.policy import make_params
from contextsim.engine.simulate import REPLAY, Simulation
from contextsim.systems.exporting import Snippet

Point = tuple[int, ...]
"""A grid point: the index of each searched parameter's value."""

Defers = Callable[[Mapping[str, Any], Skeleton, int], Deferral | None]
"""A setting's deferral on a run: (setting, skeleton, window in tokens) -> Deferral."""


@dataclass(frozen=True, slots=True)
class Dimension:
    """A searched parameter: its name and values, in increasing order (`ordered`: the
    policy uses it through comparisons that move one way as it grows), or any values
    each tried on its own (`ordered` False: a switch, a name)."""

    name: str
    values: tuple[Any, ...]
    ordered: bool = True

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError(f"{self.name}: no value to search")
        if self.ordered and list(self.values) != sorted(self.values):
            raise ValueError(f"{self.name}: ordered values must increase")


def dimensions_of(data: Sequence[Sequence[Any]]) -> tuple[Dimension, ...]:
    """Dimensions of their stored form ([[name, values, ordered], ...])."""
    return tuple(Dimension(str(n), tuple(v), bool(o)) for n, v, o in data)


def stored_dimensions(dims: Sequence[Dimension]) -> list[list[Any]]:
    """The stored form of dimensions (dimensions_of reads it back)."""
    return [[d.name, list(d.values), d.ordered] for d in dims]


def grid_points(dims: Sequence[Dimension]) -> list[Point]:
    """Every point of the grid, in grid order (the order stored results follow)."""
    return list(product(*(range(len(d.values)) for d in dims)))


def combined(
    dims: Sequence[Dimension], runs: Sequence[Sequence[Outcome]], simulated: int
) -> Tuning:
    """The Tuning of runs searched apart: each run's Outcome at every point in grid
    order (a worker's cell each), summed in run order."""
    points = grid_points(dims)
    result = Tuning(tuple(dims), simulated=simulated, grid=len(points) * len(runs))
    for k, p in enumerate(points):
        per_run = [outcomes[k] for outcomes in runs]
        result.totals[p] = total_of(per_run)
        result.per_run[p] = per_run
    return result


@dataclass(frozen=True, slots=True)
class Mechanism:
    """A context mechanism a system's users can set: its `name` (for `--mechanism`), how
    people call it, the policy that simulates it and its search space for runs of a
    window of so many tokens (`space`). Declared in the system's folder (tuning.py)."""

    name: str
    label: str
    policy: str
    space: Callable[[int], tuple[Dimension, ...]]
    defers: Defers | None = None
    """For a mechanism that defers tools' definitions instead of setting its policy:
    the Deferral a setting makes on a run (its skeleton, its window in tokens), None
    for none. The policy then runs at its own defaults, and its exporter does not
    say the setting: `configure` does."""
    configure: Callable[[Mapping[str, Any]], tuple[Snippet, ...]] | None = None
    """A setting as the real system's configuration, where the policy's exporter
    cannot say it (a `defers` mechanism)."""


POLICY_PREFIX = "policy:"
"""The name of a mechanism made for any policy on request: policy:<its name>."""
MAX_GRID_POINTS = 5_000
"""Points a grid asked for by hand may have (the product of its values' counts)."""


def grid_of(items: Iterable[str]) -> dict[str, str]:
    """Text values by parameter from items "KEY=V1,V2,..." (blank items left out);
    ValueError naming an item that is not of that form."""
    out: dict[str, str] = {}
    for item in items:
        if not item.strip():
            continue
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected KEY=V1,V2,..., got {item.strip()[:80]!r}")
        out[key.strip()] = text
    return out


def policy_mechanism(
    policy: str, label: str, params_type: type[Any], grid: Mapping[str, str]
) -> Mechanism:
    """A mechanism for any policy by name (`policy:<name>`), over the values `grid` gives
    each of its parameters as text ("1000, 2000, 4000", as `--set` takes one value).
    Numeric values are an ordered dimension (sorted), others a choice. Raises
    ValueError naming the parameter and the value that is wrong (an unknown parameter,
    a value of the wrong type, one the policy refuses, none at all), or a grid over
    MAX_GRID_POINTS."""
    if not grid:
        raise ValueError(f"{policy}: give the values to search, e.g. trigger=50000,100000")
    dims = []
    points = 1
    for name, text in grid.items():
        raw = [v.strip() for v in text.split(",") if v.strip()]
        if not raw:
            raise ValueError(f"{name}: no value to search")
        values = []
        for value in raw:
            try:
                params = make_params(params_type, {name: value})
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{name}={value}: {exc}") from None
            got = getattr(params, name)
            if isinstance(got, tuple):
                raise ValueError(f"{name}: a list of values is set, not searched")
            if isinstance(got, float) and not math.isfinite(got):
                raise ValueError(f"{name}={value}: expected a finite number")
            values.append(got)
        distinct = list(dict.fromkeys(values))
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct)
        dims.append(
            Dimension(name, tuple(sorted(distinct)) if numeric else tuple(distinct), numeric)
        )
        points *= len(distinct)
    if points > MAX_GRID_POINTS:
        raise ValueError(f"{points:,} settings; at most {MAX_GRID_POINTS:,}: fewer values")
    fixed = tuple(dims)
    return Mechanism(POLICY_PREFIX + policy, label, policy, lambda window: fixed)


def share_steps(window: int, first: float, last: float, step: float) -> tuple[int, ...]:
    """Token counts from `first` to `last` of the window (fractions), `step` apart."""
    count = round((last - first) / step)
    return tuple(sorted({round(window * (first + k * step)) for k in range(count + 1)}))


Evaluate = Callable[[int, Mapping[str, Any]], Outcome]
"""Simulates run `n` (an index into the runs searched) with these parameter values
(plain, or Traced numbers: contextsim.analysis.traced); returns its Outcome."""


@dataclass(slots=True)
class Tuning:
    """The search's result: each grid point's setting and its Outcome summed over the
    runs, with how many simulations it took (`simulated`) against the exhaustive grid's
    (`grid`: points x runs)."""

    dimensions: tuple[Dimension, ...]
    totals: dict[Point, Outcome] = field(default_factory=dict)
    per_run: dict[Point, list[Outcome]] = field(default_factory=dict)
    simulated: int = 0
    grid: int = 0

    def setting(self, point: Point) -> dict[str, Any]:
        """The parameter values of a grid point."""
        return {d.name: d.values[i] for d, i in zip(self.dimensions, point, strict=True)}

    def feasible(self) -> list[Point]:
        """The points no request of any run goes over the hard limit at."""
        return [p for p, o in self.totals.items() if o.rejected == 0]

    def frontier(self) -> list[Point]:
        """The feasible points no other feasible point beats on both cost and risk
        (less of one, no more of the other), cheapest first. Of points that do the same,
        the one of the largest values stands for them (the least intervention: a higher
        threshold, more kept), so that runs no setting changes get the setting that
        changes least."""
        points = sorted(
            self.feasible(),
            key=lambda p: (self.totals[p].cost, self.totals[p].risk, tuple(-i for i in p)),
        )
        out: list[Point] = []
        for p in points:
            if not out or self.totals[p].risk < self.totals[out[-1]].risk:
                out.append(p)
        return out

    def recommended(self) -> Point | None:
        """The cheapest feasible point of the least risk (None when every point sends a
        request over the limit); of equals, the one of the largest values (frontier)."""
        front = self.frontier()
        return front[-1] if front else None


def search(runs: int, dimensions: Sequence[Dimension], evaluate: Evaluate) -> Tuning:
    """Every grid point's Outcome over `runs` runs, simulating each run only at the
    points no earlier simulation of it settled (see the module)."""
    dims = tuple(dimensions)
    result = Tuning(dims)
    points = grid_points(dims)
    result.grid = len(points) * runs
    result.per_run = {p: [] for p in points}
    traced = [k for k, d in enumerate(dims) if d.ordered and _numeric(d.values)]
    for n in range(runs):
        found: dict[Point, Outcome] = {}
        for point in points:
            if point in found:
                continue
            got, settled = _simulated(n, point, dims, traced, evaluate)
            result.simulated += 1
            for other in settled:
                found.setdefault(other, got)
        for point in points:
            result.per_run[point].append(found[point])
    for point in points:
        result.totals[point] = total_of(result.per_run[point])
    return result


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _simulated(
    n: int, point: Point, dims: tuple[Dimension, ...], traced: list[int], evaluate: Evaluate
) -> tuple[Outcome, list[Point]]:
    """Run `n` simulated at `point`, with the points that behave as it does (itself
    at least): its traced parameters' region, the others at their values."""
    values = {d.name: d.values[i] for d, i in zip(dims, point, strict=True)}
    tracer = Tracer({dims[k].name: values[dims[k].name] for k in traced})
    try:
        got = evaluate(n, {**values, **parameters(tracer)})
    except Exception:
        # A use of a parameter a Traced number does not support (or an error of the
        # policy's own, which the plain simulation raises again): this point alone.
        return evaluate(n, values), [point]
    got = Outcome(*(settle(getattr(got, f), tracer) for f in FIELDS))
    names = [dims[k].name for k in traced]
    settled = []
    for index in region(tracer, names, [dims[k].values for k in traced]):
        other = list(point)
        for k, i in zip(traced, index, strict=True):
            other[k] = i
        settled.append(tuple(other))
    if point not in settled:  # float rounding put the simulated setting at an edge
        return got, [point]
    return got, settled


Simulate = Callable[
    [str, Mapping[str, Any], Callable[[Skeleton, int], Deferral | None] | None], Simulation
]
"""Simulates one run under a policy (by name) with these parameter values ({}: its
defaults), as every page of the run simulates it (its skeleton, fit, prices, limits),
with the deferral the last argument makes of its skeleton and window (None: none)."""


@dataclass(frozen=True, slots=True)
class RunSearch:
    """One run searched over a mechanism's grid: its Outcome at every point (grid
    order), the simulations that took, and its Outcome as logged and under its own
    policy (`current`, named `current_policy`) at that policy's own setting."""

    points: tuple[Outcome, ...]
    simulated: int
    logged: Outcome
    current: Outcome
    current_policy: str


def search_run(
    simulated: Simulate,
    mechanism: Mechanism,
    dimensions: Sequence[Dimension],
    own_policy: str,
) -> RunSearch:
    """`search` over one run, with its baselines: what the CLI and a worker's cell both
    do, so their figures are the same. `own_policy`: the run's own compaction policy
    (REPLAY when it has none). For a mechanism that defers tools, the run as it ran is
    the mechanism's policy deferring nothing (the log's definitions were all sent), so
    that only the deferral differs."""
    defers = mechanism.defers
    if defers is not None:
        own_policy = mechanism.policy

    def evaluate(n: int, values: Mapping[str, Any]) -> Outcome:
        if defers is None:
            return outcome(simulated(mechanism.policy, dict(values), None))
        return outcome(simulated(mechanism.policy, {}, partial(defers, dict(values))))

    found = search(1, dimensions, evaluate)
    return RunSearch(
        tuple(found.per_run[p][0] for p in grid_points(dimensions)),
        found.simulated,
        measured(simulated(REPLAY, {}, None)),
        outcome(simulated(own_policy, {}, None)),
        own_policy,
    )


def exhaustive(runs: int, dimensions: Sequence[Dimension], evaluate: Evaluate) -> Tuning:
    """Every run simulated at every grid point (what `search` must agree with)."""
    dims = tuple(dimensions)
    result = Tuning(dims)
    points = grid_points(dims)
    result.grid = result.simulated = len(points) * runs
    for p in points:
        outcomes = [evaluate(n, result.setting(p)) for n in range(runs)]
        result.per_run[p] = outcomes
        result.totals[p] = total_of(outcomes)
    return result


def points_of(tuning: Tuning) -> Iterator[tuple[dict[str, Any], Outcome]]:
    """Every grid point's setting and Outcome, in grid order."""
    for p in sorted(tuning.totals):
        yield tuning.setting(p), tuning.totals[p]
