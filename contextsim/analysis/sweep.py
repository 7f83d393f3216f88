"""What-if sweeps: a grid of configurations (policy x budget) over a fleet of runs, one
outcome per (run, configuration), and the totals per configuration.

A cell is independent of every other, so a sweep fans out one job per cell; `outcome`
keeps only a few figures of each simulation so the cells can be stored and merged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from contextsim.analysis.problems import KINDS, Problem
from contextsim.engine.deferral import Deferral, parse_deferral
from contextsim.engine.policy import make_params
from contextsim.engine.simulate import MAX_TOKENS, REPLAY, Simulation
from contextsim.registry import POLICIES

MAX_CONFIGS = 60
"""Configurations in one sweep (policies x budgets): enough for a curve per policy."""


class SweepError(ValueError):
    """A sweep that cannot be set up; the message names what was wrong."""


@dataclass(frozen=True, slots=True)
class Config:
    """One configuration: a policy with its parameters (as text, defaults left out), a
    budget in tokens per request, and the tools whose definitions it defers (a
    comma-separated list for contextsim.engine.deferral; "" for none)."""

    policy: str
    budget: int
    params: tuple[tuple[str, str], ...] = ()
    defer: str = ""

    @property
    def label(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.params)
        deferring = f", defer={self.defer}" if self.defer else ""
        return f"{self.policy} @ {self.budget:,}{extra}{deferring}"

    @property
    def deferral(self) -> Deferral | None:
        """The tools deferred (checked when the configuration was made)."""
        return parse_deferral(self.defer)

    def make_params(self) -> Any:
        """The policy's params dataclass (ValueError naming a bad parameter)."""
        return make_params(POLICIES[self.policy].Params, dict(self.params))

    def to_dict(self) -> dict[str, Any]:
        out = {"policy": self.policy, "budget": self.budget, "params": dict(self.params)}
        return {**out, "defer": self.defer} if self.defer else out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        params = tuple(sorted(data["params"].items()))
        return cls(data["policy"], int(data["budget"]), params, str(data.get("defer", "")))


def grid(
    policies: Sequence[str],
    budgets: Sequence[int],
    params: dict[str, dict[str, str]] | None = None,
    defer: str = "",
) -> tuple[Config, ...]:
    """Every (policy, budget) pair, policies in the order given, budgets ascending and
    without repeats. `params` maps a policy to its non-default parameters (text values).
    `defer` (tools to defer, contextsim.engine.deferral): each what-if policy's pairs
    again with those tools deferred (as_logged replays what was sent: it has none).
    Raises SweepError for an unknown policy, a bad parameter or list of tools, a budget
    that is not a positive number of tokens, an empty or an oversized grid."""
    if not policies:
        raise SweepError("policies: choose at least one policy")
    if not budgets:
        raise SweepError("budgets: give at least one budget")
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise SweepError(
            f"policies: unknown {', '.join(unknown)}; expected one of {', '.join(POLICIES)}"
        )
    bad = [b for b in budgets if not 0 < b <= MAX_TOKENS]
    if bad:
        raise SweepError(f"budgets: expected between 1 and {MAX_TOKENS:,} tokens, got {bad[0]:,}")
    ordered = sorted(set(budgets))
    names = list(dict.fromkeys(policies))
    try:
        deferral = parse_deferral(defer)
    except ValueError as exc:
        raise SweepError(str(exc)) from None
    deferred = ",".join(deferral.patterns) if deferral else ""
    variants = [n for n in names if deferred and n != REPLAY]
    size = (len(names) + len(variants)) * len(ordered)
    if size > MAX_CONFIGS:
        raise SweepError(
            f"budgets: {len(names)} policies x {len(ordered)} budgets"
            f"{' (and the deferring ones)' if variants else ''} is {size} "
            f"configurations; at most {MAX_CONFIGS}"
        )
    configs: list[Config] = []
    for name in names:
        mine = tuple(sorted((params or {}).get(name, {}).items()))
        config = Config(name, ordered[0], mine)
        try:
            config.make_params()
        except ValueError as exc:
            raise SweepError(f"{name}: {exc}") from None
        configs.extend(Config(name, b, mine) for b in ordered)
        if name in variants:
            configs.extend(Config(name, b, mine, deferred) for b in ordered)
    return tuple(configs)


def parse_budgets(text: str) -> tuple[int, ...]:
    """Budgets from text such as ``100000, 200_000 400,000``: numbers separated by
    spaces, commas or semicolons; a comma between digit groups is a thousands separator
    when it is followed by exactly three digits. Raises SweepError naming a bad item."""
    items = []
    for chunk in text.replace(";", " ").split():
        for raw in _split_commas(chunk):
            try:
                items.append(int(raw.replace("_", "")))
            except ValueError:
                raise SweepError(
                    f"budgets: expected whole numbers of tokens, got {raw!r}"
                ) from None
    return tuple(items)


def parse_settings(lines: Iterable[str]) -> dict[str, dict[str, str]]:
    """Policy parameters from lines ``policy.parameter=value`` (blank lines skipped), by
    policy. Raises SweepError naming the line and what was expected; the values
    themselves are checked by `grid`."""
    found: dict[str, dict[str, str]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        policy, dot, name = key.strip().partition(".")
        if not sep or not dot or not name.strip():
            raise SweepError(
                f"line {number}: expected policy.parameter=value, got {line.strip()!r}"
            )
        if policy not in POLICIES:
            raise SweepError(
                f"line {number}: unknown policy {policy!r}; expected one of {', '.join(POLICIES)}"
            )
        found.setdefault(policy, {})[name.strip()] = value.strip()
    return found


def _split_commas(chunk: str) -> list[str]:
    parts = chunk.strip(",").split(",")
    if len(parts) > 1 and all(len(p) == 3 and p.isdigit() for p in parts[1:]) and parts[0]:
        return ["".join(parts)]
    return [p for p in parts if p]


@dataclass(frozen=True, slots=True)
class Outcome:
    """The figures of one (run, configuration) cell. Tokens are per request; `cost` in
    dollars for the whole run; `first_rejected` is a step or None."""

    steps: int
    rejected_steps: int
    first_rejected: int | None
    over_budget_steps: int
    peak_sent: int
    total_sent: int
    cached_tokens: int
    cost: float
    problems: dict[str, int]

    @property
    def completed(self) -> bool:
        return self.rejected_steps == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "rejected_steps": self.rejected_steps,
            "first_rejected": self.first_rejected,
            "over_budget_steps": self.over_budget_steps,
            "peak_sent": self.peak_sent,
            "total_sent": self.total_sent,
            "cached_tokens": self.cached_tokens,
            "cost": self.cost,
            "problems": dict(self.problems),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        return cls(**{**data, "problems": dict(data["problems"])})


def outcome(sim: Simulation, problems: Iterable[Problem]) -> Outcome:
    """The cell figures of a simulation and its problems (counted by kind)."""
    records = sim.records
    rejected = [r.step for r in records if r.rejected]
    by_kind = dict.fromkeys(KINDS, 0)
    for p in problems:
        by_kind[p.kind] += 1
    return Outcome(
        steps=len(records),
        rejected_steps=len(rejected),
        first_rejected=rejected[0] if rejected else None,
        over_budget_steps=sum(r.over_budget for r in records),
        peak_sent=max((r.sent for r in records), default=0),
        total_sent=sum(r.sent for r in records),
        cached_tokens=sum(r.cached for r in records),
        cost=round(sum(r.cost for r in records), 6),
        problems={k: v for k, v in by_kind.items() if v},
    )


@dataclass(frozen=True, slots=True)
class Totals:
    """One configuration over the fleet: how many runs it finished (no request
    rejected), how many went over budget at least once, the largest request, and
    the sums of tokens sent, cached and of cost."""

    runs: int
    completed_runs: int
    over_budget_runs: int
    rejected_steps: int
    peak_sent: int
    total_sent: int
    cached_tokens: int
    cost: float

    @property
    def rejected_runs(self) -> int:
        return self.runs - self.completed_runs


def totals(outcomes: Iterable[Outcome]) -> Totals:
    """Totals of the cells of one configuration (any number, in any order)."""
    cells = list(outcomes)
    return Totals(
        runs=len(cells),
        completed_runs=sum(o.completed for o in cells),
        over_budget_runs=sum(o.over_budget_steps > 0 for o in cells),
        rejected_steps=sum(o.rejected_steps for o in cells),
        peak_sent=max((o.peak_sent for o in cells), default=0),
        total_sent=sum(o.total_sent for o in cells),
        cached_tokens=sum(o.cached_tokens for o in cells),
        cost=round(sum(o.cost for o in cells), 6),
    )
