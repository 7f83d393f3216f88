"""What every policy shares: the Plan of one request, the Protocol, typed parameters.

A policy turns (history prefix, parameters, estimator) into a Plan: a handful of
integers saying which ranges of the saved history are sent, left out or summarized,
and which tool results are cleared. Plans never copy messages, so a 10,000-step run
costs 10,000 small objects, not 10,000 requests.

`as_logged` replays what the agent sent, the log's own compactions included: it is the
baseline. Every other policy is a what-if, compared with what was sent: it simulates on
the run's full history with a compaction's own artifacts taken out (the summary a
compaction wrote would not exist without it; simulate counts it as 0 tokens).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from contextsim.counting.memory import earlier, per_skeleton
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.accounting import Accountant
from contextsim.engine.plan import Plan, Statics

__all__ = ["Context", "Plan", "Planner", "Policy", "Statics", "make_params"]


@dataclass(frozen=True, slots=True)
class Context:
    """Everything a policy may look at when it is set up for one run."""

    skeleton: Skeleton
    budget: int
    hard_limit: int
    count: Callable[[str], int]
    """Counts a fixed text (a note) with the run's estimator, overhead excluded."""
    provider: Callable[[int], int] = int
    """The provider's count of a request the estimator counts n tokens (the reconciled
    size, contextsim.truth.reconcile). Policies that decide on the provider's count (context
    editing, Claude Code and Codex auto-compaction) compare this with their trigger;
    policies that decide on the harness's own count use the estimator's tokens as they
    are. The identity when nothing is reconciled."""


class Planner(Protocol):
    statics: Statics

    def plan(self, end: int) -> Plan:
        """The plan of the request whose history is [0, end); called in step order."""
        ...


class Policy(Protocol):
    name: str
    label: str
    source: str
    Params: type[Any]

    def setup(self, ctx: Context, params: Any) -> Planner: ...

    # Optional: `trigger(skeleton, params) -> (tokens, source)`, the size at which a
    # policy that models a tool's compaction acts on this run and where that figure
    # comes from (the log, the tool's rule), for the pages to show (policy_trigger).

    def replacements(self, params: Any) -> dict[str, str]:
        """What stands in place of what the policy removes, for showing a request:
        keyed "c" (a cleared result), "o" (an offloaded one), "t" (the note where
        messages were left out), "s" (a summary); a key is missing when nothing is
        inserted there."""
        ...


def policy_trigger(policy: Policy, sk: Skeleton, params: Any) -> tuple[int, str] | None:
    """The policy's trigger on this run (see Policy), None for a policy without one."""
    found = getattr(policy, "trigger", None)
    if found is None:
        return None
    value: tuple[int, str] = found(sk, params)
    return value


def no_statics(size: int) -> Statics:
    return Statics([False] * size, [0] * size, [False] * size, [0] * size)


def plain_accounts(sk: Skeleton) -> tuple[Statics, Accountant]:
    """No statics (nothing cleared or offloaded) and their Accountant, made once per
    skeleton: the policies that only cut or summarize share them (read-only)."""
    return per_skeleton(sk, "plain_accounts", lambda: _plain(sk))


def _plain(sk: Skeleton) -> tuple[Statics, Accountant]:
    statics = no_statics(sk.size)
    before = earlier(sk, "plain_accounts")
    return statics, Accountant(sk, statics, grown_from=before[1] if before else None)


def param_fields(params_type: type[Any]) -> list[dataclasses.Field[Any]]:
    return list(dataclasses.fields(params_type))


def _convert(name: str, kind: Any, raw: str) -> Any:
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        if raw.lower() in ("", "none", "null") and type(None) in args:
            return None
        kind = next(a for a in args if a is not type(None))
    if kind is bool:
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name}: expected true or false, got {raw!r}")
    if typing.get_origin(kind) is tuple:
        return tuple(s.strip() for s in raw.split(",") if s.strip())
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected {kind.__name__}, got {raw!r}") from None
    if isinstance(value, int | float) and value < 0:
        raise ValueError(f"{name}: expected a value >= 0, got {raw!r}")
    return value


def make_params(params_type: type[Any], values: dict[str, str]) -> Any:
    """A params dataclass from text values (CLI --set, query strings); unknown keys and
    bad values raise ValueError naming the key and what was expected."""
    hints = typing.get_type_hints(params_type)
    known = {f.name for f in param_fields(params_type)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(
            f"unknown parameter {', '.join(unknown)}; expected one of {', '.join(sorted(known))}"
        )
    return params_type(**{k: _convert(k, hints[k], v) for k, v in values.items()})


def changed_params(params: Any) -> dict[str, Any]:
    """The parameters that differ from their defaults (for short permalinks)."""
    default = type(params)()
    return {
        f.name: getattr(params, f.name)
        for f in param_fields(type(params))
        if getattr(params, f.name) != getattr(default, f.name)
    }


def positions(flags: Sequence[bool]) -> list[int]:
    return [i for i, f in enumerate(flags) if f]
