"""Command line.

``python -m contextsim inspect PATH [--format NAME] [--json]``: what a log holds.
``python -m contextsim simulate PATH|demo:NAME [--policy P]... [--budget N] ...``: what
each policy would send at every request, and the problems found.
``python -m contextsim estimators PATH... [--reference o200k|cl100k] [--json]``: every
estimator against a real tokenizer, per writing script.
``python -m contextsim export-config --policy P [--set k=v]... [--target T] [--json]``:
the policy as the real system's configuration (contextsim.cli.export_config).

Works without Django. On bad input it prints the error to stderr and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from contextsim.analysis.compactions import Limit
from contextsim.analysis.estimator_report import compare_text, file_text, signed_error
from contextsim.analysis.findings import findings
from contextsim.analysis.report import load_runs, readable, simulation_summary
from contextsim.cli import export_config as export_command
from contextsim.cli import run_agent, send_history, tune
from contextsim.cli.parameters import set_values
from contextsim.counting.builder import build, reference_tokens
from contextsim.counting.estimators import DEFAULT, ESTIMATORS
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.deferral import Deferral, deferred_names, parse_deferral, removed_names
from contextsim.engine.policy import make_params, param_fields
from contextsim.engine.simulate import REPLAY, reconciliation, simulate
from contextsim.ingest.base import FormatError
from contextsim.ingest.captures import FORMAT as CAPTURED
from contextsim.ingest.detect import IMPORTERS, parse_path
from contextsim.model import Run, request_count
from contextsim.registry import POLICIES, own_trigger
from contextsim.truth.compaction_points import CompactionPoint, compaction_points, requests_of
from contextsim.truth.costs import PRESETS, Prices
from contextsim.truth.prices import (
    ModelFacts,
    assumed_prices,
    model_facts,
    run_limits,
    run_measured_cost,
    unpriced_models,
    window_source,
)
from contextsim.truth.reconcile import Reconciliation


def run_summary(run: Run) -> dict[str, Any]:
    """The facts `inspect` reports for one run (counts of messages and requests,
    the largest measured request context in tokens or None)."""
    measured = [m.usage.context for m in run.messages if m.usage is not None]
    return {
        "title": run.title,
        "model": run.model,
        "messages": len(run.messages),
        "requests": request_count(run),
        "requests_with_usage": len(measured),
        "max_measured_context": max(measured) if measured else None,
        "compactions": len(run.compactions),
        "tool_calls": sum(len(m.tool_calls) for m in run.messages),
        "subagent": run.subagent,
    }


def _inspect(args: argparse.Namespace) -> int:
    parsed = parse_path(args.path, args.format)
    summaries = [run_summary(r) for r in parsed.runs]
    report = {"format": parsed.format, "runs": summaries}
    for warning in parsed.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    print(f"{args.path}: {parsed.format}, {len(parsed.runs)} run(s)")
    for r in summaries:
        peak = r["max_measured_context"]
        print(
            f"- {r['title']}{' (subagent)' if r['subagent'] else ''}: model {r['model'] or '?'}, "
            f"{r['messages']} messages, {r['requests']} requests "
            f"({r['requests_with_usage']} measured, peak {peak if peak is not None else '-'} "
            f"tokens), {r['tool_calls']} tool calls, {r['compactions']} compactions"
        )
    return 0


def _simulate(args: argparse.Namespace) -> int:
    if args.estimator not in ESTIMATORS:
        raise FormatError(
            args.path,
            "",
            f"unknown estimator {args.estimator!r}; expected one of {', '.join(ESTIMATORS)}",
        )
    policies = args.policy or [REPLAY]
    configs = _configs(policies, args.set or [])
    deferral = _deferral(args.defer or "", args.remove or "", policies)
    runs, warnings = load_runs(args.path, args.format)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    estimator = ESTIMATORS[args.estimator]
    reference = ESTIMATORS.get(args.reference) if args.reference != args.estimator else None
    out = []
    for run in runs:
        sk = build(run, estimator)
        ref = reference_tokens(run, reference) if reference is not None else None
        facts = model_facts(run.model)
        prices = _prices(args.prices, args.price or [], None if args.prices else facts, run.model)
        hard_limit, budget, said = run_limits(run, args.hard_limit, args.budget)
        if said:
            print(f"warning: {run.title}: {said}", file=sys.stderr)
        points = compaction_points(sk, [build(r, estimator) for r in requests_of(run, runs)])
        # A capture holds its requests whole: nothing unlogged to fit.
        rec = _reconciliation(args, sk, points, run.format == CAPTURED)
        own = own_trigger(run.format)
        deferring, names, dropped = _deferred(run.title, sk, deferral)
        for name, params in configs:
            sim = simulate(
                sk,
                POLICIES[name],
                params,
                budget=budget,
                hard_limit=hard_limit,
                count=estimator.count,
                prices=prices,
                reconcile=rec,
                deferral=deferring,
            )
            where = window_source(run.model, run.context_window, run.window_source)
            window = Limit(hard_limit, "--hard-limit" if args.hard_limit else where)
            _, found = findings(sim, POLICIES[name], own, window, prices, ref, run.rejections)
            summary = simulation_summary(sim, found, args.steps)
            summary["reconciliation"] = rec.to_dict() if rec is not None else None
            summary["measured_cost"] = run_measured_cost(run.model, sk.usage, prices)
            summary["prices"] = prices.label
            summary["deferred"], summary["removed"] = names, dropped
            unpriced = unpriced_models(run.model, sk.usage, prices)
            if unpriced:
                summary["prices"] += f"; prices unknown for {', '.join(unpriced)}: not counted"
            out.append(summary)
    if args.json:
        print(json.dumps({"runs": out}, ensure_ascii=False, indent=1))
    else:
        for summary in out:
            print("\n".join(readable(summary)))
    return 0


def _deferral(text: str, removed: str, policies: list[str]) -> Deferral | None:
    """The --defer and --remove options' deferral; FormatError for a bad one or one
    with as_logged."""
    option = "--defer" if text else "--remove"
    try:
        deferral = parse_deferral(text, removed=removed)
    except ValueError as exc:
        raise FormatError(option, (text or removed)[:80], str(exc)) from None
    if deferral is not None and REPLAY in policies:
        raise FormatError(
            option,
            (text or removed)[:80],
            "as_logged replays what was sent; deferring or removing tools is a what-if: "
            "choose a policy",
        )
    return deferral


def _deferred(
    title: str, sk: Skeleton, deferral: Deferral | None
) -> tuple[Deferral | None, list[str], list[str]]:
    """The deferral for this run and the tools it defers and removes; a run that cannot
    take it (it defines none of them, or calls a tool removed) is simulated with every
    definition, with a warning saying why."""
    if deferral is None:
        return None, [], []
    try:
        return deferral, deferred_names(sk, deferral), removed_names(sk, deferral)
    except ValueError as exc:
        print(f"warning: {title}: {exc}; simulated with every definition", file=sys.stderr)
        return None, [], []


def _reconciliation(
    args: argparse.Namespace, sk: Skeleton, points: tuple[CompactionPoint, ...], exact: bool
) -> Reconciliation | None:
    """The run's fit (its compaction requests' points included), unless --no-reconcile;
    --overhead and --scale replace its terms."""
    if args.no_reconcile:
        return None
    return reconciliation(sk, overhead=args.overhead, scale=args.scale, points=points, exact=exact)


def _prices(
    preset: str | None, overrides: list[str], facts: ModelFacts | None = None, model: str = ""
) -> Prices:
    """The model's prices (genai-prices) when known and no preset is asked for, else a
    preset (named by the person, or standing in for `model`'s unknown prices, and
    labelled so); with `field=value` overrides (dollars per million tokens, or
    multipliers for cache_read and cache_write), which name them too."""
    if facts is not None:
        base = facts.prices
    elif preset:
        base = replace(PRESETS[preset], named=True)
    else:
        base = assumed_prices(model, PRESETS["anthropic"])
    values: dict[str, float] = {}
    for item in overrides:
        key, _, raw = item.partition("=")
        if key not in ("input", "output", "cache_read", "cache_write"):
            raise FormatError(
                "--price",
                "",
                f"unknown price {key!r}; expected input, output, cache_read or cache_write",
            )
        try:
            values[key] = float(raw)
        except ValueError:
            raise FormatError("--price", key, f"expected a number, got {raw!r}") from None
    return Prices(
        label=f"{base.label}, edited" if values else base.label,
        input=values.get("input", base.input),
        output=values.get("output", base.output),
        cache_read=values.get("cache_read", base.cache_read),
        cache_write=values.get("cache_write", base.cache_write),
        writes_cache=base.writes_cache,
        model="" if values else base.model,
        named=bool(values) or base.named,
    )


def _configs(policies: list[str], settings: list[str]) -> list[tuple[str, object]]:
    values = set_values(settings)
    configs = []
    used: set[str] = set()
    for name in policies:
        if name not in POLICIES:
            raise FormatError(
                "--policy", "", f"unknown policy {name!r}; expected one of {', '.join(POLICIES)}"
            )
        known = {f.name for f in param_fields(POLICIES[name].Params)}
        mine = {k: v for k, v in values.items() if k in known}
        used |= mine.keys()
        try:
            configs.append((name, make_params(POLICIES[name].Params, mine)))
        except ValueError as exc:
            raise FormatError("--set", name, str(exc)) from None
    unused = sorted(set(values) - used)
    if unused:
        raise FormatError("--set", "", f"no chosen policy has parameter {', '.join(unused)}")
    return configs


def _estimators(args: argparse.Namespace) -> int:
    files = []
    for path in args.paths:
        report = compare_text(file_text(path), args.reference)
        files.append({"path": path, **report})
    if args.json:
        print(json.dumps({"reference": args.reference, "files": files}, indent=1))
        return 0
    for f in files:
        print(f"{f['path']} (reference {args.reference})")
        names = [n for n in f["total"] if n not in ("chars", "reference")]
        print("  " + " ".join(f"{h:>16}" for h in ("script", "chars", "reference", *names)))
        for script, row in [*f["scripts"].items(), ("total", f["total"])]:
            cells = [script, f"{row['chars']:,}", f"{row['reference']:,}"]
            for n in names:
                error = signed_error(row[n], row["reference"])
                cells.append(f"{row[n]:,}" + ("" if error is None else f" {error:+.0%}"))
            print("  " + " ".join(f"{c:>16}" for c in cells))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m contextsim", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    inspect = sub.add_parser("inspect", help="summarize the runs in a log file")
    inspect.add_argument("path")
    inspect.add_argument("--format", choices=sorted(IMPORTERS), help="skip detection")
    inspect.add_argument("--json", action="store_true", help="print one JSON object")
    inspect.set_defaults(handler=_inspect)
    sim = sub.add_parser("simulate", help="simulate context policies over runs")
    sim.add_argument("path", help="a log file, or demo:subagents, demo:early-stop, demo:main")
    sim.add_argument("--format", choices=sorted(IMPORTERS), help="skip detection")
    sim.add_argument("--policy", action="append", help="repeat to compare (default as_logged)")
    sim.add_argument(
        "--budget", type=_tokens, help="tokens per request (default: the model's window)"
    )
    sim.add_argument(
        "--hard-limit",
        type=_tokens,
        help="what the model accepts (default: the window the log states, else the "
        "model's from genai-prices, else 1,000,000)",
    )
    sim.add_argument(
        "--no-reconcile",
        action="store_true",
        help="report the estimator's counts, without the fitted unlogged overhead and scale",
    )
    sim.add_argument(
        "--overhead", type=int, help="unlogged tokens per request (replaces the fitted one)"
    )
    sim.add_argument(
        "--scale", type=_ratio, help="provider tokens per estimator token (replaces the fit)"
    )
    sim.add_argument(
        "--estimator",
        default=DEFAULT,
        help=f"one of {', '.join(ESTIMATORS)} (default {DEFAULT}, as the dashboard)",
    )
    sim.add_argument(
        "--reference",
        default="o200k",
        help="tokenizer judging estimates where the log measured nothing",
    )
    sim.add_argument("--set", action="append", metavar="KEY=VALUE", help="a policy parameter")
    sim.add_argument(
        "--prices",
        choices=sorted(PRESETS),
        help="cost preset (default: the run's model's prices from genai-prices, else anthropic)",
    )
    sim.add_argument(
        "--price",
        action="append",
        metavar="NAME=VALUE",
        help="override a price: input, output ($ per million tokens), "
        "cache_read, cache_write (multipliers of input)",
    )
    sim.add_argument(
        "--defer",
        metavar="TOOLS",
        help="what if these tools' definitions were deferred (Anthropic's tool search): "
        "names or prefix* patterns, comma-separated (a capture holds the definitions)",
    )
    sim.add_argument(
        "--remove",
        metavar="TOOLS",
        help="what if these tools, never called, were not offered at all (as --defer)",
    )
    sim.add_argument("--json", action="store_true", help="print one JSON object")
    sim.add_argument("--steps", action="store_true", help="add one record per request")
    sim.set_defaults(handler=_simulate)
    est = sub.add_parser("estimators", help="compare estimators by writing script")
    est.add_argument("paths", nargs="+", help="text files or run logs")
    est.add_argument("--reference", choices=("o200k", "cl100k"), default="o200k")
    est.add_argument("--json", action="store_true", help="print one JSON object")
    est.set_defaults(handler=_estimators)
    export_command.add_to(sub, _tokens)
    run_agent.add_to(sub)
    send_history.add_to(sub)
    tune.add_to(sub)
    return parser


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text}") from None
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"expected a ratio above 0 and at most 100, got {text}")
    return value


def _tokens(text: str) -> int:
    value = int(text.replace(",", "").replace("_", ""))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of tokens, got {text}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except FormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return code
