"""`python -m contextsim tune LOG... [--mechanism M] [--json]`: for the runs of these logs,
which setting of each context mechanism their system can use would have cost least,
with no request over the model's limit and the least risk (contextsim.analysis.tuning),
against what really happened (as_logged), and the setting as the real system's
configuration.

Each run is simulated as `simulate` simulates it by default: its window as the hard
limit, the model's prices (each response at its own model's), sizes reconciled with its
measured usage. The search space is the mechanism's, for the smallest window of the
runs (a threshold must suit them all).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from contextsim.analysis.outcomes import Outcome, total_of
from contextsim.analysis.report import load_runs
from contextsim.analysis.tuning import (
    Mechanism,
    Tuning,
    combined,
    grid_of,
    policy_mechanism,
    search_run,
)
from contextsim.counting.builder import build
from contextsim.counting.estimators import DEFAULT, ESTIMATORS, Estimator
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.deferral import Deferral
from contextsim.engine.simulate import REPLAY, Simulation, reconciliation, simulate
from contextsim.ingest.base import FormatError
from contextsim.ingest.captures import FORMAT as CAPTURED
from contextsim.model import Run
from contextsim.registry import (
    EVERY_MECHANISM,
    POLICIES,
    PROVIDERS,
    export,
    mechanisms,
    own_trigger,
)
from contextsim.systems.exporting import ExportContext
from contextsim.truth.compaction_points import compaction_points, requests_of
from contextsim.truth.costs import PRESETS, Prices
from contextsim.truth.prices import assumed_prices, model_facts, run_limits
from contextsim.truth.reconcile import Reconciliation

CAVEAT = (
    "a simulation replays the agent's own messages: with another context it might have "
    "behaved otherwise (the risk counts where that is most likely)"
)


@dataclass(frozen=True, slots=True)
class Prepared:
    """One run ready to simulate as `simulate` does by default."""

    run: Run
    skeleton: Skeleton
    prices: Prices
    hard_limit: int
    budget: int
    reconcile: Reconciliation | None


def prepare(run: Run, runs: list[Run], estimator: Estimator) -> Prepared:
    """The run's skeleton, prices, limits and fit (its compaction requests among `runs`)."""
    sk = build(run, estimator)
    facts = model_facts(run.model)
    preset = PRESETS[PROVIDERS.get(run.format, "anthropic")]
    prices = facts.prices if facts is not None else assumed_prices(run.model, preset)
    hard_limit, budget, _ = run_limits(run, None, None)
    points = compaction_points(sk, [build(r, estimator) for r in requests_of(run, runs)])
    rec = reconciliation(sk, points=points, exact=run.format == CAPTURED)
    return Prepared(run, sk, prices, hard_limit, budget, rec)


def simulated(
    p: Prepared,
    policy: str,
    values: Mapping[str, Any],
    defers: Callable[[Skeleton, int], Deferral | None] | None = None,
    *,
    estimator: Estimator,
) -> Simulation:
    """The run under `policy` with these values, and the deferral `defers` makes of it."""
    chosen = POLICIES[policy]
    params = dataclasses.replace(chosen.Params(), **values) if values else None
    return simulate(
        p.skeleton,
        chosen,
        params,
        budget=p.budget,
        hard_limit=p.hard_limit,
        count=estimator.count,
        prices=p.prices,
        reconcile=p.reconcile,
        deferral=defers(p.skeleton, p.hard_limit) if defers is not None else None,
    )


@dataclass(frozen=True, slots=True)
class Baselines:
    """What the setting is set beside, summed over the runs: what really happened
    (`logged`: as_logged, its measured usage priced) and the same as the simulation
    reproduces it (`current`: each run's own compaction policy at its own setting, else
    as_logged). A saving is counted against `current`: both sides are then simulated the
    same way, and only the setting differs."""

    logged: Outcome
    current: Outcome
    current_policies: tuple[str, ...]


def tune_mechanism(
    mechanism: Mechanism, prepared: list[Prepared], estimator: Estimator
) -> tuple[Tuning, Baselines]:
    """Each run searched on its own (as a worker's cell searches it), the runs summed
    per grid point, and the baselines."""
    window = min(p.hard_limit for p in prepared)
    dims = mechanism.space(window)
    searched = []
    for p in prepared:
        own = own_trigger(p.run.format)
        searched.append(
            search_run(
                partial(simulated, p, estimator=estimator),
                mechanism,
                dims,
                own.name if own is not None else REPLAY,
            )
        )
    found = combined(dims, [r.points for r in searched], sum(r.simulated for r in searched))
    logged = total_of([r.logged for r in searched])
    current = total_of([r.current for r in searched])
    policies = tuple(sorted({r.current_policy for r in searched}))
    return found, Baselines(logged, current, policies)


def report(
    mechanism: Mechanism, prepared: list[Prepared], found: Tuning, base: Baselines
) -> dict[str, Any]:
    """What `tune` says of one mechanism, JSON-ready."""
    best = found.recommended()
    out: dict[str, Any] = {
        "mechanism": mechanism.name,
        "label": mechanism.label,
        "policy": mechanism.policy,
        "runs": [p.run.title for p in prepared],
        "window": min(p.hard_limit for p in prepared),
        "grid_points": len(found.totals),
        "simulations": found.simulated,
        "grid_simulations": found.grid,
        "as_logged": dataclasses.asdict(base.logged),
        "current": {"policies": list(base.current_policies), **dataclasses.asdict(base.current)},
        "frontier": [
            {"setting": found.setting(p), **dataclasses.asdict(found.totals[p])}
            for p in found.frontier()
        ],
        "recommended": None,
        "caveat": CAVEAT,
    }
    if mechanism.defers is not None and not any(p.skeleton.definitions for p in prepared):
        out["why_none"] = (
            "these logs hold no tool definitions (a capture of the requests does: "
            "contextsim run -- <agent>), so no setting changes what was sent"
        )
        return out
    if best is None:
        out["why_none"] = "every setting sends a request over the model's limit"
        return out
    if found.totals[best].cost >= base.current.cost:
        out["why_none"] = (
            "no setting of it costs less than the runs as they ran "
            f"(the cheapest: {found.setting(best)}, ${found.totals[best].cost:.4f})"
        )
        return out
    chosen = found.totals[best]
    setting = found.setting(best)
    first = prepared[0]
    if mechanism.configure is not None:
        snippets = mechanism.configure(setting)
    else:
        params = dataclasses.replace(POLICIES[mechanism.policy].Params(), **setting)
        context = ExportContext(params, first.budget, first.hard_limit, first.run.model)
        snippets = export(mechanism.policy, context)
    out["recommended"] = {
        "setting": setting,
        **dataclasses.asdict(chosen),
        "saved": base.current.cost - chosen.cost,
        "saved_share": (
            (base.current.cost - chosen.cost) / base.current.cost if base.current.cost else 0.0
        ),
        "runs_at_risk": [
            prepared[n].run.title for n, o in enumerate(found.per_run[best]) if o.risk or o.rejected
        ],
        "configuration": [
            {"target": s.target, "label": s.label, "text": s.text, "notes": list(s.notes)}
            for s in snippets
        ],
    }
    return out


def add_to(sub: Any) -> None:
    """Add the `tune` command to the CLI's subparsers."""
    cmd = sub.add_parser(
        "tune",
        help="find the cheapest setting of each context mechanism the runs' system can use",
    )
    cmd.add_argument("paths", nargs="+", metavar="LOG", help="log files")
    cmd.add_argument("--format", help="the logs' format (default: detected)")
    cmd.add_argument(
        "--mechanism",
        action="append",
        default=[],
        help="these mechanisms, on every run (repeatable; default: each run's agent's own)",
    )
    cmd.add_argument(
        "--policy",
        help="also any policy by name, over the values --grid gives its parameters",
    )
    cmd.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2,...",
        help="values of a parameter of --policy to search (repeatable)",
    )
    cmd.add_argument("--estimator", default=DEFAULT, help=f"token estimator (default {DEFAULT})")
    cmd.add_argument("--json", action="store_true", help="print JSON")
    cmd.set_defaults(handler=tune)


def tune(args: argparse.Namespace) -> int:
    """The `tune` command: 0, or 2 for bad input (named)."""
    if args.estimator not in ESTIMATORS:
        raise FormatError("--estimator", "", f"unknown estimator {args.estimator!r}")
    estimator = ESTIMATORS[args.estimator]
    runs: list[Run] = []
    for path in args.paths:
        loaded, warnings = load_runs(path, args.format)
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        runs += loaded
    tuned = [r for r in runs if not r.compaction_request]
    unknown = [m for m in args.mechanism if m not in EVERY_MECHANISM]
    if unknown:
        known = ", ".join(EVERY_MECHANISM)
        print(f"error: --mechanism: unknown {', '.join(unknown)}; known: {known}", file=sys.stderr)
        return 2
    chosen_policy = _policy_mechanism(args.policy, args.grid)
    by_mechanism: dict[str, tuple[Mechanism, list[Run]]] = {}
    for run in tuned:
        # Asked for by name, a mechanism is tried on every run; else each run's own.
        offered = [EVERY_MECHANISM[m] for m in args.mechanism]
        if chosen_policy is not None:
            offered.append(chosen_policy)
        for m in offered or mechanisms(run.format):
            by_mechanism.setdefault(m.name, (m, []))[1].append(run)
    if not by_mechanism:
        print(
            "error: no run here can use any mechanism: name one with --mechanism", file=sys.stderr
        )
        return 2
    out = []
    for mechanism, chosen in by_mechanism.values():
        prepared = [prepare(r, runs, estimator) for r in chosen]
        found, base = tune_mechanism(mechanism, prepared, estimator)
        out.append(report(mechanism, prepared, found, base))
    if args.json:
        print(json.dumps({"estimator": args.estimator, "mechanisms": out}, indent=2))
    else:
        for item in out:
            print(_text(item))
    return 0


def _policy_mechanism(policy: str | None, grid: list[str]) -> Mechanism | None:
    """The mechanism --policy and --grid ask for (None without --policy); FormatError
    naming the option for what is wrong."""
    if policy is None:
        if grid:
            raise FormatError("--grid", "", "give the policy it searches with --policy")
        return None
    if policy not in POLICIES or policy == REPLAY:
        known = ", ".join(n for n in POLICIES if n != REPLAY)
        raise FormatError("--policy", "", f"unknown policy {policy!r}; known: {known}")
    chosen = POLICIES[policy]
    try:
        return policy_mechanism(policy, chosen.label, chosen.Params, grid_of(grid))
    except ValueError as exc:
        raise FormatError("--grid", "", str(exc)) from None


def _context(figures: dict[str, Any]) -> str:
    """Peak and median request, and the cache hit rate, of an Outcome as a dict."""
    said = f"peak {figures['peak']:,} tokens"
    if figures["median"] >= 0:
        said += f", median {figures['median']:,}"
    if figures["cached"] >= 0 and figures["sent"]:
        said += f", {100 * figures['cached'] / figures['sent']:.1f}% read from the cache"
    return said


def _text(item: dict[str, Any]) -> str:
    logged, current = item["as_logged"], item["current"]
    lines = [
        f"{item['label']} ({item['mechanism']}), {len(item['runs'])} run(s), "
        f"window {item['window']:,} tokens",
        f"  what happened: ${logged['cost']:.4f} measured, {_context(logged)}",
        f"  simulated as it ran ({', '.join(current['policies'])}): ${current['cost']:.4f}, "
        f"{_context(current)}, {current['rejected']} over the limit, risk {current['risk']}",
        f"  searched {item['grid_points']} settings with {item['simulations']:,} "
        f"simulations ({item['grid_simulations']:,} for the whole grid)",
    ]
    best = item["recommended"]
    if best is None:
        lines.append(f"  no setting to recommend: {item['why_none']}")
        return "\n".join(lines)
    setting = ", ".join(f"{k}={v}" for k, v in best["setting"].items())
    lines += [
        f"  recommended: {setting}: ${best['cost']:.4f} "
        f"(saves ${best['saved']:.4f}, {100 * best['saved_share']:.1f}% of the simulated "
        "run), "
        f"{_context(best)}, risk {best['risk']}",
    ]
    for snippet in best["configuration"]:
        lines.append(f"  {snippet['label']}:")
        lines += [f"    {line}" for line in snippet["text"].splitlines()]
    lines.append(f"  note: {item['caveat']}")
    return "\n".join(lines)
