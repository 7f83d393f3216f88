"""Parameters that remember how a simulation used them, so that one simulation settles
every setting that would have taken the same decisions (contextsim.analysis.tuning).

A searched parameter is handed to its policy as a `Traced` number: it behaves exactly as
its value does (every result the policy computes is the same number), and it also
carries the affine form of that value in the searched parameters (a*p + b, exactly, in
fractions). Each time the policy compares such a number, the outcome of that comparison
holds for a set of parameter values bounded by one inequality; the `Tracer` keeps them.
After the simulation, every grid point that satisfies all of them would have taken every
decision the same way, with the same numbers wherever the parameters did not reach, so
it sends the same requests and has the same outcome.

What is not a comparison is made safe, not guessed:
- a conversion to an integer (int(), floor, ceil, round) holds only where the integer is
  the same: that range is recorded as two inequalities;
- what needs the exact value (an index, a float, a hash, a string, an equality that
  holds, a product of two parameters) pins the parameters involved to their values;
- a value still traced in the simulation's outcome pins the parameters it depends on
  (the outcome then moves with them).

So the region is never larger than the settings that truly behave alike; at worst it is
the one point simulated. Floating-point comparisons are recorded exactly; grid points
within a relative 1e-9 of such a boundary are left out of the region (the float
arithmetic of the policy could round them either way), to be simulated themselves.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from contextsim.analysis.tracer import FLIPPED, NEGATION, RELATIONS, Exact, Number, Tracer


def parameters(tracer: Tracer) -> dict[str, Traced]:
    """Each of the tracer's parameters as a Traced number of its value."""
    return {
        name: Traced(tracer, value, {name: 1}, 0, isinstance(value, float))
        for name, value in tracer.values.items()
    }


def _unit_bound(rel: str, result: bool, a: int) -> tuple[bool, bool]:
    held = rel if result else NEGATION[rel]
    if a < 0:
        held = FLIPPED[held]
    return held[0] == "<", held in ("<=", ">=")


_UNIT_BOUNDS = {
    (rel, result, a): _unit_bound(rel, result, a)
    for rel in NEGATION
    for result in (True, False)
    for a in (1, -1)
}
"""(relation, its result, coefficient) -> (an upper bound?, closed?) on the parameter."""


def _exact(x: Number) -> Exact | None:
    """A plain number exactly: an int as it is, a float as a fraction (None for
    infinities and NaN)."""
    if isinstance(x, int):
        return x
    if not math.isfinite(x):
        return None
    return Fraction(x)


class Traced:
    """A number (`value`) equal to coef.p + const in the searched parameters p, that
    records in its Tracer what each use of it depends on. Only plain numbers (int,
    float) and other Traced numbers of the same Tracer are operands; anything else is
    not supported (TypeError, as for any number)."""

    __slots__ = ("coef", "const", "inexact", "scale", "tracer", "unit", "value")

    def __init__(
        self,
        tracer: Tracer,
        value: Number | Fraction,
        coef: dict[str, Exact],
        const: Exact,
        inexact: bool,
    ) -> None:
        self.tracer = tracer
        self.value = value
        self.coef = {k: v for k, v in coef.items() if v}
        self.const = const
        self.inexact = inexact or isinstance(value, float)
        # The largest magnitude its float arithmetic went through: rounding errors are
        # relative to it, so the margin kept around a float boundary is too.
        self.scale = abs(float(value)) if self.inexact else 0.0
        if isinstance(value, float) and not math.isfinite(value):
            tracer.pin(self.coef)  # overflowed: no range of it is safe
        # One parameter with coefficient +-1, all in ints: compared on the fast path.
        self.unit: tuple[str, int] | None = None
        if len(self.coef) == 1 and not self.inexact and type(const) is int:
            ((name, a),) = self.coef.items()
            if a == 1 or a == -1:
                self.unit = (name, int(a))

    # -- building new numbers --------------------------------------------------
    def _plain(self, value: Any) -> Any:
        """The value of something the parameters reach non-linearly: pinned."""
        self.tracer.pin(self.coef)
        return value

    def _affine(self, other: Any, sign: int, value: Any) -> Any:
        if isinstance(other, Traced):
            coef = dict(self.coef)
            for k, v in other.coef.items():
                coef[k] = coef.get(k, 0) + sign * v
            const = self.const + sign * other.const
            inexact = self.inexact or other.inexact
            if inexact:
                # A parameter that cancels out still moves the rounding: pinned.
                self.tracer.pin(k for k, v in coef.items() if not v)
            made = Traced(self.tracer, value, coef, const, inexact)
            made.scale = max(made.scale, self.scale, other.scale)
            return made
        exact = _exact(other)
        if exact is None:
            return self._plain(value)
        made = Traced(
            self.tracer,
            value,
            self.coef,
            self.const + sign * exact,
            self.inexact or isinstance(other, float),
        )
        made.scale = max(made.scale, self.scale, abs(float(other)) if made.inexact else 0.0)
        return made

    def _scaled(self, factor: Any, value: Any) -> Any:
        if isinstance(factor, Traced):
            if not factor.coef:
                factor = factor.value
            elif not self.coef:
                return factor._scaled(self.value, value)
            else:
                self.tracer.pin(factor.coef)
                return self._plain(value)
        exact = _exact(factor)
        if exact is None:
            return self._plain(value)
        inexact = self.inexact or isinstance(factor, float)
        coef = {k: v * exact for k, v in self.coef.items()}
        made = Traced(self.tracer, value, coef, self.const * exact, inexact)
        if inexact:
            made.scale = max(made.scale, self.scale * abs(float(factor)))
        return made

    def _shifted(self, sign: int, other: int) -> Traced:
        """sign x self + other, for a unit number and an int (the fast path)."""
        name, a = self.unit  # type: ignore[misc]
        made = Traced.__new__(Traced)
        made.tracer, made.inexact, made.scale = self.tracer, False, 0.0
        made.value = sign * self.value + other
        made.coef = {name: sign * a}
        made.const = sign * self.const + other
        made.unit = (name, sign * a)
        return made

    def __add__(self, other: Any) -> Any:
        if self.unit is not None and type(other) is int:
            return self._shifted(1, other)
        if not isinstance(other, Traced | int | float):
            return NotImplemented
        return self._affine(other, 1, self.value + _v(other))

    def __radd__(self, other: Any) -> Any:
        if self.unit is not None and type(other) is int:
            return self._shifted(1, other)
        if not isinstance(other, int | float):
            return NotImplemented
        return self._affine(other, 1, _v(other) + self.value)

    def __sub__(self, other: Any) -> Any:
        if self.unit is not None and type(other) is int:
            return self._shifted(1, -other)
        if not isinstance(other, Traced | int | float):
            return NotImplemented
        return self._affine(other, -1, self.value - _v(other))

    def __rsub__(self, other: Any) -> Any:
        if self.unit is not None and type(other) is int:
            return self._shifted(-1, other)
        if not isinstance(other, int | float):
            return NotImplemented
        return (-self)._affine(other, 1, _v(other) - self.value)

    def __neg__(self) -> Traced:
        coef = {k: -v for k, v in self.coef.items()}
        made = Traced(self.tracer, -self.value, coef, -self.const, self.inexact)
        made.scale = max(made.scale, self.scale)
        return made

    def __pos__(self) -> Traced:
        return self

    def __abs__(self) -> Traced:
        return -self if self < 0 else self

    def __mul__(self, other: Any) -> Any:
        if not isinstance(other, Traced | int | float):
            return NotImplemented
        return self._scaled(other, self.value * _v(other))

    def __rmul__(self, other: Any) -> Any:
        if not isinstance(other, int | float):
            return NotImplemented
        return self._scaled(other, _v(other) * self.value)

    def __truediv__(self, other: Any) -> Any:
        if not isinstance(other, Traced | int | float):
            return NotImplemented
        value = self.value / _v(other)
        if isinstance(other, Traced) and other.coef:
            self.tracer.pin(other.coef)
            return self._plain(value)
        divisor = _v(other)
        if isinstance(divisor, float) and not math.isfinite(divisor):
            return self._plain(value)
        made = self._scaled(1 / Fraction(divisor), value)
        if isinstance(made, Traced) and isinstance(divisor, float):
            made.inexact = True
            made.scale = max(made.scale, self.scale / abs(divisor) if divisor else 0.0)
        return made

    def __rtruediv__(self, other: Any) -> Any:
        if not isinstance(other, int | float):
            return NotImplemented
        return self._plain(_v(other) / self.value)

    def __floordiv__(self, other: Any) -> Any:
        if not isinstance(other, Traced | int | float):
            return NotImplemented
        divisor = _v(other)
        if isinstance(other, Traced) and other.coef:
            self.tracer.pin(other.coef)
            return self._plain(self.value // divisor)
        if isinstance(divisor, float) or isinstance(self.value, float) or not divisor:
            quotient = self.value // divisor
            share = self / divisor
            if not isinstance(share, Traced):
                return quotient
            if math.floor(share.value) != quotient:
                # Python's float // rounds otherwise than the division: this value alone.
                return share._plain(quotient)
            share._constant_over(quotient, quotient + 1, False)
            return quotient
        # Exact: an integer divided by an integer, floored.
        inner = self._scaled(Fraction(1, 1) / divisor, Fraction(self.value) / divisor)
        return Floored(inner) if isinstance(inner, Traced) else inner // 1

    def __rfloordiv__(self, other: Any) -> Any:
        if not isinstance(other, int | float):
            return NotImplemented
        return self._plain(_v(other) // self.value)

    def _exactly(self, other: Any) -> Any:
        """Both operands needed exactly (%, **): this one pinned, and the other, when
        traced, pinned too (a floored one fixed to its value's range)."""
        self.tracer.pin(self.coef)
        if isinstance(other, Floored):
            return other.fixed()
        if isinstance(other, Traced):
            other.tracer.pin(other.coef)
            return other.value
        return other

    def __mod__(self, other: Any) -> Any:
        return self.value % self._exactly(other)

    def __rmod__(self, other: Any) -> Any:
        return self._exactly(other) % self.value

    def __pow__(self, other: Any) -> Any:
        return self.value ** self._exactly(other)

    def __rpow__(self, other: Any) -> Any:
        return self._exactly(other) ** self.value

    # -- comparisons -----------------------------------------------------------
    def _compare(self, other: Any, rel: str) -> bool:
        result: bool = RELATIONS[rel](self.value, _v(other))
        kind = type(other)
        if kind is float and not math.isfinite(other):
            # Another setting could overflow to it: this value alone.
            self.tracer.pin(self.coef)
            return result
        if (kind is int or kind is float) and len(self.coef) == 1:
            # The common case, without building the difference: a.p + const - other.
            ((name, a),) = self.coef.items()
            const = self.const - other
            inexact = self.inexact or kind is float
            scale = max(self.scale, abs(other)) if inexact else 0.0
            held = rel if result else NEGATION[rel]
            self.tracer.single(name, a, const, held, inexact, scale)
            return result
        diff = self - other
        if isinstance(diff, Traced):
            held = rel if result else NEGATION[rel]
            diff.tracer.holds(diff.coef, diff.const, held, diff.inexact, diff.scale)
        return result

    def _unit(self, other: int, result: bool, rel: str) -> bool:
        """a.p + const REL other held (or not), a = +-1, all ints: a bound on p."""
        name, a = self.unit  # type: ignore[misc]
        upper, closed = _UNIT_BOUNDS[rel, result, a]
        bound = (other - self.const) * a
        tracer = self.tracer
        # Tracer.bound, inline: this runs at every comparison of every request.
        if upper:
            old = tracer.high.get(name)
            if old is None or bound < old[0] or (bound == old[0] and not closed):
                tracer.high[name] = (bound, closed)
        else:
            old = tracer.low.get(name)
            if old is None or bound > old[0] or (bound == old[0] and not closed):
                tracer.low[name] = (bound, closed)
        return result

    # The fast path first: policies compare a threshold with sizes in every request.
    def __lt__(self, other: Any) -> bool:
        if self.unit is not None and type(other) is int:
            return self._unit(other, self.value < other, "<")
        if not isinstance(other, Traced | int | float):
            return NotImplemented
        return self._compare(other, "<")

    def __le__(self, other: Any) -> bool:
        if self.unit is not None and type(other) is int:
            return self._unit(other, self.value <= other, "<=")
        if not isinstance(other, Traced | int | float):
            return NotImplemented
        return self._compare(other, "<=")

    def __gt__(self, other: Any) -> bool:
        if self.unit is not None and type(other) is int:
            return self._unit(other, self.value > other, ">")
        if not isinstance(other, Traced | int | float):
            return NotImplemented
        return self._compare(other, ">")

    def __ge__(self, other: Any) -> bool:
        if self.unit is not None and type(other) is int:
            return self._unit(other, self.value >= other, ">=")
        if not isinstance(other, Traced | int | float):
            return NotImplemented
        return self._compare(other, ">=")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Traced | int | float):
            return NotImplemented
        if self.value == _v(other):
            diff = self - other
            if isinstance(diff, Traced):
                self.tracer.pin(diff.coef)
            return True
        # Unequal: the side it lies on is what the region keeps.
        self._compare(other, "<" if self.value < _v(other) else ">")
        return False

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(self._plain(self.value))

    # -- conversions -----------------------------------------------------------
    def _constant_over(self, low: Number, high: Number, closed_high: bool) -> None:
        """Record low <= self (< or <=) high: where a conversion gives the same result."""
        self._compare(low, ">=")
        self._compare(high, "<=" if closed_high else "<")

    def __floor__(self) -> Any:
        return Floored(self) if self.coef else math.floor(self.value)

    def __ceil__(self) -> int:
        k = math.ceil(self.value)
        if not self.coef:
            return k
        self._compare(k - 1, ">")
        self._compare(k, "<=")
        return k

    def __trunc__(self) -> int:
        # int() must return a plain int: fixed over where it holds (math.floor keeps
        # the region whole: Floored).
        k = math.trunc(self.value)
        if self.value >= 0:
            self._constant_over(k, k + 1, False)
        else:
            self._compare(k - 1, ">")
            self._compare(k, "<=")
        return k

    def __int__(self) -> int:
        return self.__trunc__()

    def __round__(self, ndigits: int | None = None) -> Any:
        if ndigits is not None:
            return self._plain(round(self.value, ndigits))
        k = round(self.value)
        if abs(self.value - k) == 0.5:  # a tie, rounded to even: this value alone
            return self._plain(k)
        self._compare(k - 0.5, ">")
        self._compare(k + 0.5, "<")
        return k

    def __index__(self) -> int:
        if not isinstance(self.value, int):
            raise TypeError(f"a traced {type(self.value).__name__} is not an index")
        return int(self._plain(self.value))

    def __float__(self) -> float:
        return float(self._plain(self.value))

    def __bool__(self) -> bool:
        return self != 0

    def __repr__(self) -> str:
        return repr(self._plain(self.value))

    def __str__(self) -> str:
        return str(self._plain(self.value))

    def __format__(self, spec: str) -> str:
        return format(self._plain(self.value), spec)


class Floored:
    """floor(e) + k of a Traced number e and an integer k: an integer whose comparisons
    with plain numbers are still inequalities in e (floor(e) + k < s exactly when
    e < ceil(s - k), and so on), so that a threshold set as int(fraction x window) keeps
    its whole region. Adding or taking an integer changes k (floor(e) is computed once,
    as the policy's own arithmetic computes it); anything else fixes it to its value
    over the range of e where that value holds (recorded)."""

    __slots__ = ("inner", "offset", "value")

    def __init__(self, inner: Traced, offset: int = 0) -> None:
        self.inner = inner
        self.offset = offset
        self.value = math.floor(inner.value) + offset

    def fixed(self) -> int:
        """The value, recorded as holding: value - k <= e < value - k + 1."""
        low = self.value - self.offset
        self.inner._constant_over(low, low + 1, False)
        return int(self.value)

    def __add__(self, other: Any) -> Any:
        if type(other) is int:
            return Floored(self.inner, self.offset + other)
        return self.fixed() + other

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if type(other) is int:
            return Floored(self.inner, self.offset - other)
        return self.fixed() - other

    def __rsub__(self, other: Any) -> Any:
        return other - self.fixed()

    def __mul__(self, other: Any) -> Any:
        return self.fixed() * other

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        return self.fixed() / other

    def __rtruediv__(self, other: Any) -> Any:
        return other / self.fixed()

    def __floordiv__(self, other: Any) -> Any:
        return self.fixed() // other

    def __rfloordiv__(self, other: Any) -> Any:
        return other // self.fixed()

    def __neg__(self) -> Any:
        return -self.fixed()

    def __abs__(self) -> Any:
        return abs(self.fixed())

    def _compare(self, other: Any, rel: str) -> Any:
        if isinstance(other, Traced | Floored) or not isinstance(other, int | float):
            return RELATIONS[rel](self.fixed(), other)
        if isinstance(other, float) and not math.isfinite(other):
            return RELATIONS[rel](self.value, other)
        # floor(e) < s <=> e < ceil(s); <= s <=> e < floor(s) + 1; > and >= negated
        # (s less the offset: floor(e) + k < s <=> floor(e) < s - k).
        other = other - self.offset
        if rel == "<":
            return self.inner._compare(math.ceil(other), "<")
        if rel == "<=":
            return self.inner._compare(math.floor(other) + 1, "<")
        if rel == ">":
            return self.inner._compare(math.floor(other) + 1, ">=")
        return self.inner._compare(math.ceil(other), ">=")

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, "<")

    def __le__(self, other: Any) -> Any:
        return self._compare(other, "<=")

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, ">")

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, ">=")

    def __eq__(self, other: object) -> bool:
        return bool(self.fixed() == other)

    def __ne__(self, other: object) -> bool:
        return bool(self.fixed() != other)

    def __hash__(self) -> int:
        return hash(self.fixed())

    def __index__(self) -> int:
        return self.fixed()

    __int__ = __index__
    __floor__ = __index__
    __ceil__ = __index__
    __trunc__ = __index__

    def __round__(self, ndigits: int | None = None) -> int:
        return self.fixed()

    def __float__(self) -> float:
        return float(self.fixed())

    def __bool__(self) -> bool:
        return bool(self.fixed())

    def __repr__(self) -> str:
        return repr(self.fixed())

    def __format__(self, spec: str) -> str:
        return format(self.fixed(), spec)


def _v(x: Any) -> Any:
    return x.value if isinstance(x, Traced | Floored) else x


def settle(value: Any, tracer: Tracer) -> Any:
    """A result read out of a traced simulation as a plain number: a Traced one pins
    what it depends on (the result moves with those parameters)."""
    if isinstance(value, Floored):
        tracer.pin(value.inner.coef)
        return value.value
    if isinstance(value, Traced):
        tracer.pin(value.coef)
        return value.value
    return value
