"""Traced parameters (contextsim.analysis.traced): every setting a simulation's region
admits computes what the simulated one computed. Checked on generated programs of the
arithmetic, conversions and comparisons policies use, against the same programs run on
plain numbers at every point of a grid."""

from __future__ import annotations

import math
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.analysis.traced import parameters, settle
from contextsim.analysis.tracer import Tracer, region

P_VALUES = tuple(range(41))
Q_VALUES = tuple(round(0.05 * k, 2) for k in range(41))

leaves = st.one_of(
    st.sampled_from([("var", "p"), ("var", "q")]),
    st.integers(-20, 20).map(lambda c: ("const", c)),
    st.sampled_from([0.5, 0.25, 0.1, 0.7, 1.5, 3.0]).map(lambda c: ("const", c)),
)


def _nodes(inner):
    return st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*", "min", "max"]), inner, inner),
        st.tuples(st.just("/"), inner, st.sampled_from([2, 3, 0.5, 4.0, -2])),
        st.tuples(st.just("//"), inner, st.sampled_from([2, 3, 7, 10, 2.5])),
        st.tuples(st.sampled_from(["floor", "ceil", "int", "round", "abs", "neg"]), inner),
    )


expressions = st.recursive(leaves, _nodes, max_leaves=6)
comparisons = st.lists(
    st.tuples(
        expressions,
        st.sampled_from(["<", "<=", ">", ">=", "==", "!=", "truth"]),
        st.integers(-30, 30) | st.sampled_from([0.5, 2.5, 7.25]),
    ),
    min_size=1,
    max_size=5,
)


def run(node, env):
    kind = node[0]
    if kind == "var":
        return env[node[1]]
    if kind == "const":
        return node[1]
    if kind in ("floor", "ceil", "int", "round", "abs", "neg"):
        x = run(node[1], env)
        return {
            "floor": math.floor,
            "ceil": math.ceil,
            "int": int,
            "round": round,
            "abs": abs,
            "neg": lambda v: -v,
        }[kind](x)
    a = run(node[1], env)
    b = node[2] if kind in ("/", "//") else run(node[2], env)
    if kind == "+":
        return a + b
    if kind == "-":
        return a - b
    if kind == "*":
        return a * b
    if kind == "min":
        return min(a, b)
    if kind == "max":
        return max(a, b)
    if kind == "/":
        return a / b
    return a // b


def observe(program, env, tracer=None):
    """What a policy would act on: each comparison's result, and each expression's
    value read out (settled when traced)."""
    seen = []
    for expr, rel, const in program:
        value = run(expr, env)
        if rel == "truth":
            seen.append(bool(value))
        else:
            seen.append(
                {
                    "<": value < const,
                    "<=": value <= const,
                    ">": value > const,
                    ">=": value >= const,
                    "==": value == const,
                    "!=": value != const,
                }[rel]
            )
        seen.append(settle(value, tracer) if tracer is not None else value)
    return seen


@settings(max_examples=300, deadline=None)
@given(program=comparisons, p=st.sampled_from(P_VALUES), q=st.sampled_from(Q_VALUES))
def test_every_admitted_setting_computes_what_the_simulated_one_did(program, p, q):
    tracer = Tracer({"p": p, "q": q})
    traced = observe(program, parameters(tracer), tracer)
    assert traced == observe(program, {"p": p, "q": q})
    admitted = region(tracer, ["p", "q"], [P_VALUES, Q_VALUES])
    assert (P_VALUES.index(p), Q_VALUES.index(q)) in admitted
    for i, j in admitted:
        assert observe(program, {"p": P_VALUES[i], "q": Q_VALUES[j]}) == traced, (i, j)


def test_a_threshold_compared_once_admits_the_whole_interval():
    tracer = Tracer({"p": 10, "q": 0.0})
    params = parameters(tracer)
    size = 12
    assert size >= params["p"]  # as a policy compares: a plain size with the threshold
    admitted = region(tracer, ["p", "q"], [P_VALUES, Q_VALUES])
    assert sorted({P_VALUES[i] for i, _ in admitted}) == list(range(13))
    assert {Q_VALUES[j] for _, j in admitted} == set(Q_VALUES)


def test_a_floored_share_keeps_its_region():
    """int(share x window) would fix the threshold to one token; math.floor keeps every
    share that gives the same comparisons."""
    tracer = Tracer({"p": 0, "q": 0.8})
    share = parameters(tracer)["q"]
    threshold = max(math.floor(share * 1000), 1)
    size = 700
    assert not size >= threshold
    admitted = region(tracer, ["p", "q"], [P_VALUES, Q_VALUES])
    assert {Q_VALUES[j] for _, j in admitted} == {q for q in Q_VALUES if q * 1000 > 700}


def test_what_needs_the_exact_value_pins_it():
    tracer = Tracer({"p": 3, "q": 1.0})
    params = parameters(tracer)
    sizes = [10, 20, 30, 40]
    assert sizes[params["p"] :] == [40]  # a slice: an index
    admitted = region(tracer, ["p", "q"], [P_VALUES, Q_VALUES])
    assert {P_VALUES[i] for i, _ in admitted} == {3}
    assert len(admitted) == len(Q_VALUES)


def test_an_outcome_that_moves_with_a_parameter_pins_it():
    tracer = Tracer({"p": 5, "q": 1.0})
    cost = sum([1.5, 2.0]) * parameters(tracer)["q"]
    assert settle(cost, tracer) == 3.5
    admitted = region(tracer, ["p", "q"], [P_VALUES, Q_VALUES])
    assert {(P_VALUES[i], Q_VALUES[j]) for i, j in admitted} == set(product(P_VALUES, [1.0]))


def _sound(values, grids, program):
    """Run `program` on the traced values, then on every grid point the region admits:
    the same results (the simulated point admitted too)."""
    tracer = Tracer(values)
    traced = [settle(x, tracer) for x in program(parameters(tracer))]
    assert traced == program(values)
    names = list(grids)
    admitted = region(tracer, names, [grids[n] for n in names])
    assert tuple(grids[n].index(values[n]) for n in names) in admitted
    for index in admitted:
        point = {n: grids[n][i] for n, i in zip(names, index, strict=True)}
        assert program(point) == traced, point


INTS = tuple(range(1, 9))
TENTHS = tuple(round(0.1 * k, 1) for k in range(1, 9))
FINE = tuple(round(0.001 * k, 3) for k in range(1, 30))

# What a review found the traced numbers let through: each a program and where it runs.
HOLES = {
    "a traced modulus": ({"p": 7, "q": 3}, {"p": INTS, "q": INTS}, lambda v: [v["p"] % v["q"]]),
    "a traced exponent": ({"p": 2, "q": 3}, {"p": INTS, "q": INTS}, lambda v: [v["p"] ** v["q"]]),
    "a floored modulus": (
        {"p": 7, "q": 0.3},
        {"p": INTS, "q": TENTHS},
        lambda v: [v["p"] % math.floor(v["q"] * 10), math.floor(v["q"] * 10) % v["p"]],
    ),
    "a float floor division": (
        {"p": 1},
        {"p": INTS},
        lambda v: [v["p"] // 0.1, v["p"] // 0.1 < 10],
    ),
    "a floored share plus a reserve": (
        {"q": 0.009},
        {"q": FINE},
        lambda v: [math.floor(v["q"] * 200_000) + 13_000 <= 14_799],
    ),
    "a parameter that cancels out": (
        {"q": 0.5},
        {"q": TENTHS},
        lambda v: [(v["q"] + 1.0) - v["q"] < 1, (v["q"] + 1.0) - v["q"] == 1],
    ),
    "rounding of large intermediates": (
        {"q": 0.3000001},
        {"q": (0.3000001, 0.3000002, 0.3000004, 0.3000006)},
        lambda v: [((v["q"] + 1e10) - 1e10) < 0.3000005],
    ),
    "an overflow": ({"p": 1}, {"p": (1, 2)}, lambda v: [v["p"] * 1e308 < math.inf]),
}


@pytest.mark.parametrize("hole", list(HOLES))
def test_what_a_review_found_is_safe(hole):
    values, grids, program = HOLES[hole]
    _sound(values, grids, program)


def test_dividing_by_infinity_is_a_number_not_an_error():
    tracer = Tracer({"p": 3, "q": 0.0})
    assert settle(parameters(tracer)["p"] / math.inf, tracer) == 0.0
