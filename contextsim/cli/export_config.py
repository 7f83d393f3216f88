"""``python -m contextsim export-config --policy NAME [--set k=v]... [--target T] [--json]``:
the configuration that makes the real system behave as the policy simulates, with the
parameters chosen (contextsim.registry).

Plain output prints each snippet under a header naming its target, its notes as
``note:`` lines; with ``--target`` naming one snippet, only its text goes to standard
output (pipe it into a file) and the notes to standard error. ``--json`` prints every
target at once. A policy without a real counterpart is an error (exit 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from contextsim.cli.parameters import set_values
from contextsim.engine.policy import make_params, param_fields
from contextsim.ingest.base import FormatError
from contextsim.registry import EXPORTERS, POLICIES, export
from contextsim.systems.exporting import ExportContext, Snippet
from contextsim.truth.prices import default_limits


def add_to(sub: Any, tokens: Any) -> None:
    """Add the `export-config` command to the CLI's subparsers; `tokens` parses token
    counts as the other commands do."""
    cmd = sub.add_parser("export-config", help="print a policy as the real system's configuration")
    cmd.add_argument("--policy", required=True, help="one of " + ", ".join(EXPORTERS))
    cmd.add_argument("--set", action="append", metavar="KEY=VALUE", help="a policy parameter")
    cmd.add_argument("--target", help="only this target (e.g. anthropic-api, codex)")
    cmd.add_argument("--model", default="", help="the model the agent runs (its window)")
    cmd.add_argument("--budget", type=tokens, help="tokens per request (default 200,000)")
    cmd.add_argument("--hard-limit", type=tokens, help="the model's window (default its own)")
    cmd.add_argument("--json", action="store_true", help="every target as one JSON object")
    cmd.set_defaults(handler=run)


def snippets_for(args: argparse.Namespace) -> tuple[Snippet, ...]:
    """The snippets the arguments ask for; FormatError naming what was wrong."""
    name = args.policy
    if name not in POLICIES:
        raise FormatError(
            "--policy", "", f"unknown policy {name!r}; expected one of {', '.join(POLICIES)}"
        )
    if name not in EXPORTERS:
        raise FormatError(
            "--policy",
            name,
            "this policy has no real counterpart to configure; policies that have: "
            + ", ".join(EXPORTERS),
        )
    params = _params(name, args.set or [])
    hard, budget, _ = default_limits(args.model, None)
    ctx = ExportContext(params, args.budget or budget, args.hard_limit or hard, args.model)
    found = export(name, ctx)
    if args.target:
        found = tuple(s for s in found if s.target == args.target)
        if not found:
            targets = ", ".join(s.target for s in export(name, ctx))
            raise FormatError(
                "--target", name, f"no target {args.target!r}; expected one of {targets}"
            )
    return found


def _params(policy: str, settings: list[str]) -> Any:
    values = set_values(settings)
    known = {f.name for f in param_fields(POLICIES[policy].Params)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise FormatError(
            "--set", policy, f"no parameter {', '.join(unknown)}; it has {', '.join(sorted(known))}"
        )
    try:
        return make_params(POLICIES[policy].Params, values)
    except ValueError as exc:
        raise FormatError("--set", policy, str(exc)) from None


def run(args: argparse.Namespace) -> int:
    found = snippets_for(args)
    if args.json:
        print(json.dumps({"policy": args.policy, "snippets": [asdict(s) for s in found]}, indent=1))
        return 0
    if args.target and len(found) == 1:
        for note in found[0].notes:
            print(f"note: {note}", file=sys.stderr)
        print(found[0].text.rstrip("\n"))
        return 0
    for snippet in found:
        print(f"== {snippet.label} [{snippet.target}, {snippet.language}] ==")
        for note in snippet.notes:
            print(f"note: {note}")
        print(snippet.text.rstrip("\n"), end="\n\n")
    return 0
