"""Command line: ``python -m contextsim inspect PATH [--format NAME] [--json]``.

Works without Django. On bad input it prints the error to stderr and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from contextsim.formats import IMPORTERS, FormatError, parse_path
from contextsim.model import Run, request_count


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m contextsim", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    inspect = sub.add_parser("inspect", help="summarize the runs in a log file")
    inspect.add_argument("path")
    inspect.add_argument("--format", choices=sorted(IMPORTERS), help="skip detection")
    inspect.add_argument("--json", action="store_true", help="print one JSON object")
    inspect.set_defaults(handler=_inspect)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except FormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return code
