"""Reports of simulations as plain data (for the CLI's JSON and readable output)."""

from __future__ import annotations

from typing import Any

from contextsim.analysis.problems import Problem
from contextsim.engine.columns import columns
from contextsim.engine.simulate import Simulation
from contextsim.ingest.base import FormatError
from contextsim.ingest.detect import parse_path
from contextsim.model import Run
from contextsim.systems.seed.demo import DEMOS, demo_runs


def load_runs(spec: str, format: str | None = None) -> tuple[tuple[Run, ...], list[str]]:
    """The runs named by `spec`: a log file path, or ``demo:NAME``; plus warnings."""
    if spec.startswith("demo:"):
        name = spec.removeprefix("demo:")
        if name not in DEMOS:
            raise FormatError(spec, "", f"unknown demo; expected one of {', '.join(DEMOS)}")
        return demo_runs(name), []
    parsed = parse_path(spec, format)
    return parsed.runs, list(parsed.warnings)


def problem_dict(p: Problem) -> dict[str, Any]:
    """A problem as JSON: where, what, and what it cost (tokens, US dollars, how counted:
    contextsim.analysis.impact)."""
    return {
        "step": p.step,
        "kind": p.kind,
        "severity": p.severity,
        "detail": p.detail,
        "cost_tokens": p.tokens,
        "cost_usd": round(p.dollars, 6),
        "cost_counted": p.impact,
    }


def simulation_summary(
    sim: Simulation, problems: list[Problem] | None, steps: bool
) -> dict[str, Any]:
    """The figures of one (run, policy) pair; with `steps`, one record per request;
    problems listed unless None."""
    records = sim.records
    # Running totals, taken over from the run a live run grew from: its dashboard
    # summarises every request per view.
    totals = columns(sim)
    out: dict[str, Any] = {
        "title": sim.skeleton.title,
        "policy": sim.policy,
        "estimator": sim.skeleton.estimator,
        "budget": sim.budget,
        "hard_limit": sim.hard_limit,
        "steps": len(records),
        "rejected_steps": totals.rejected_sums[-1],
        "over_budget_steps": totals.over_sums[-1],
        "peak_sent": totals.peaks[-1],
        "total_sent": totals.sent_sums[-1],
        "cached_tokens": totals.cached_sums[-1],
        "cost": round(totals.cost_sums[-1], 6),
        "completed": not totals.rejected_sums[-1],
        "stages": dict(totals.stage_counts),
        "problems": [problem_dict(p) for p in problems or ()],
    }
    if steps:
        out["step_records"] = [
            {
                "step": r.step,
                "sent": r.sent,
                "estimated": r.estimated,
                "full": r.full,
                "stage": r.stage,
                "cached": r.cached,
                "measured": r.measured,
                "dispositions": sim.dispositions(r.step),
            }
            for r in records
        ]
    return out


def readable(summary: dict[str, Any]) -> list[str]:
    """A few lines a person reads in a terminal."""
    s = summary
    lines = [
        f"{s['title']} — {s['policy']} ({s['estimator']}, budget {s['budget']:,}, "
        f"hard limit {s['hard_limit']:,})",
        f"  {s['steps']} requests: {s['rejected_steps']} rejected, {s['over_budget_steps']} over "
        f"budget; peak {s['peak_sent']:,} tokens, total {s['total_sent']:,}, "
        f"{s['cached_tokens']:,} cached, ${s['cost']:.2f}; "
        f"{'completed' if s['completed'] else 'NOT completed'}",
        "  stages: " + ", ".join(f"{k} {v}" for k, v in s["stages"].items()),
    ]
    by_kind: dict[str, list[int]] = {}
    for p in s["problems"]:
        by_kind.setdefault(p["kind"], []).append(p["step"])
    for kind, steps in by_kind.items():
        first = next(p for p in s["problems"] if p["kind"] == kind)
        more = f" (and {len(steps) - 1} more)" if len(steps) > 1 else ""
        lines.append(f"  ! {kind} at step {steps[0]}{more}: {first['detail']}")
    return lines
