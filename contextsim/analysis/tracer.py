"""The record of one traced simulation: the inequalities its comparisons put on the
searched parameters, and the grid points that keep all of them
(contextsim.analysis.traced makes the numbers that fill it; contextsim.analysis.tuning
uses the region).

Each inequality in one parameter narrows that parameter's interval; one in several is
kept as a half-space. A parameter the simulation needed the exact value of is pinned.
Comparisons computed in floats keep their bound a relative 1e-9 clear of where the
policy's rounding could fall; the simulated setting itself is always in its region.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from itertools import product
from typing import Any

Number = int | float
Exact = int | Fraction
"""A number held exactly: ints stay ints (fast), the rest are fractions."""

EDGE = Fraction(1, 10**9)
"""How close, relatively, a grid point may come to a float boundary and still count."""
_MARGIN = 1e-9


class Tracer:
    """The inequalities one simulation's comparisons put on the searched parameters
    (`values`: each one's value in this simulation, by name). Not shared between
    simulations: a fresh one per simulation. An inequality in one parameter narrows its
    interval (`low`, `high`: bound and whether it is closed); one in several is kept."""

    def __init__(self, values: Mapping[str, Number]) -> None:
        self.values = dict(values)
        self.pinned: set[str] = set()
        self.low: dict[str, tuple[Exact | float, bool]] = {}
        self.high: dict[str, tuple[Exact | float, bool]] = {}
        # (coefficients by name, constant, relation, inexact, scale): a.p + b REL 0.
        self.joint: list[tuple[dict[str, Exact], Exact, str, bool, float]] = []

    def pin(self, names: Any) -> None:
        """Only the values of these parameters behave as they did."""
        self.pinned.update(names)

    def holds(
        self, coef: dict[str, Exact], const: Exact, rel: str, inexact: bool, scale: float = 0.0
    ) -> None:
        """Record that coef.p + const REL 0 held (REL one of < <= > >=); `scale`: the
        largest magnitude the float arithmetic behind it went through."""
        if len(coef) > 1:
            self.joint.append((coef, const, rel, inexact, scale))
            return
        if not coef:
            return
        ((name, a),) = coef.items()
        self.single(name, a, const, rel, inexact, scale)

    def single(
        self,
        name: str,
        a: Exact,
        const: Exact | float,
        rel: str,
        inexact: bool,
        scale: float = 0.0,
    ) -> None:
        """Record that a.p + const REL 0 held, for the parameter `name` (a != 0).
        `inexact`: the policy computed it in floats, so the bound is kept clear of where
        its rounding could fall: by a relative 1e-9 of the bound, or of `scale` (the
        largest magnitude the arithmetic went through) over |a| when that is larger."""
        if a < 0:
            rel = FLIPPED[rel]
        bound: Exact | float
        if inexact:
            bound = float(-const / a)
            room = max(abs(bound), 1.0, scale / abs(float(a)))
            bound += (-_MARGIN if rel[0] == "<" else _MARGIN) * room
            closed = True
        else:
            if a == 1:  # the common case: the parameter plus or minus a size
                bound = -const
            elif isinstance(a, int) and isinstance(const, int):
                bound = Fraction(-const, a)
            else:
                bound = -const / a
            closed = rel in ("<=", ">=")
        self.bound(name, bound, rel[0] == "<", closed)

    def bound(self, name: str, bound: Exact | float, upper: bool, closed: bool) -> None:
        """p <= bound (`upper`, `closed`), p < bound, p >= bound or p > bound holds."""
        if upper:
            old = self.high.get(name)
            if old is None or bound < old[0] or (bound == old[0] and not closed):
                self.high[name] = (bound, closed)
        else:
            old = self.low.get(name)
            if old is None or bound > old[0] or (bound == old[0] and not closed):
                self.low[name] = (bound, closed)

    def within(self, name: str, value: Number) -> bool:
        """Whether a value of one parameter keeps every inequality in it alone."""
        if value == self.values[name]:
            return True  # simulated: it behaves as it did, whatever the float edges
        if name in self.pinned:
            return False
        low, high = self.low.get(name), self.high.get(name)
        if low is not None and not (value > low[0] or (low[1] and value == low[0])):
            return False
        return high is None or value < high[0] or (high[1] and value == high[0])

    def admits(self, point: Mapping[str, Number]) -> bool:
        """Whether a setting (every traced parameter's value) keeps every recorded
        inequality, clear of float boundaries, and agrees on the pinned parameters."""
        if not all(self.within(name, point[name]) for name in self.values):
            return False
        if all(point[name] == value for name, value in self.values.items()):
            return True
        exact = {name: Fraction(point[name]) for name in self.values}
        for coef, const, rel, inexact, scale in self.joint:
            terms = [Fraction(a) * exact[name] for name, a in coef.items()]
            total = Fraction(const) + sum(terms, Fraction(0))
            if inexact:
                room = sum((abs(t) for t in terms), abs(Fraction(const))) + 1
                if abs(total) <= EDGE * max(room, Fraction(scale)):
                    return False
            if not RELATIONS[rel](total, 0):
                return False
        return True


RELATIONS: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
"""A relation's name -> the comparison itself."""
NEGATION = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}
"""The relation that holds when this one does not."""
FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
"""The relation once both sides are multiplied by a negative number."""


def region(
    tracer: Tracer, names: Sequence[str], grids: Sequence[Sequence[Number]]
) -> list[tuple[int, ...]]:
    """The grid points (an index into each of `grids`, the values of `names` in order)
    the tracer admits: those that behave as the simulated setting did."""
    candidates = [
        [i for i, v in enumerate(values) if tracer.within(name, v)]
        for name, values in zip(names, grids, strict=True)
    ]
    out = []
    for index in product(*candidates):
        if not tracer.joint or tracer.admits(
            {n: g[i] for n, g, i in zip(names, grids, index, strict=True)}
        ):
            out.append(index)
    return out
