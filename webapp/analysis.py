"""Reading an analysis: the view state from the query string, and the simulations it
asks for. Everything a view shows is a function of (run, query string), so a copied
URL reproduces the view."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from django.http import QueryDict

from contextsim.estimators import ESTIMATORS, Estimator
from contextsim.model import KINDS
from contextsim.policies import POLICIES
from contextsim.policies.base import changed_params, make_params, param_fields
from contextsim.problems import Problem, detect
from contextsim.simulate import MAX_TOKENS, Simulation, simulate
from contextsim.skeleton import Skeleton, from_dict
from contextsim.sweep import Config
from webapp import trace
from webapp.charts import composition_figure
from webapp.models import Run, RunSkeleton
from webapp.services.skeletons import build_skeleton

DEFAULTS = {"policy": "mythex", "budget": 400_000, "hard_limit": 1_000_000, "estimator": "o200k"}


class BadQuery(ValueError):
    """A query parameter that cannot be used; the message names it."""


@dataclass(frozen=True, slots=True)
class ViewState:
    """Everything that decides what the analysis shows."""

    policy: str
    params: Any
    budget: int
    hard_limit: int
    estimator: str
    compare: str
    compare_params: Any

    def query(self, **override: Any) -> str:
        """The query string of this state, defaults left out (short permalinks)."""
        items = {
            "policy": self.policy,
            "budget": self.budget,
            "hard_limit": self.hard_limit,
            "estimator": self.estimator,
            "compare": self.compare,
            **{k: _text(v) for k, v in changed_params(self.params).items()},
            **override,
        }
        q = QueryDict(mutable=True)
        for key, value in items.items():
            if value in ("", None) or DEFAULTS.get(key) == value:
                continue
            q[key] = str(value)
        return q.urlencode()


def config_query(config: Config, estimator: str, hard_limit: int) -> str:
    """The dashboard query string of a sweep's configuration."""
    state = ViewState(
        config.policy, config.make_params(), config.budget, hard_limit, estimator, "", None
    )
    return state.query()


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(value)
    if value is None:
        return "none"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _tokens(query: QueryDict, key: str) -> int:
    raw = query.get(key, "")
    if raw == "":
        return int(DEFAULTS[key])
    try:
        value = int(raw.replace(",", "").replace("_", ""))
    except ValueError:
        raise BadQuery(f"{key}: expected a whole number of tokens, got {raw!r}") from None
    if not 0 < value <= MAX_TOKENS:
        raise BadQuery(f"{key}: expected between 1 and {MAX_TOKENS:,} tokens, got {value:,}")
    return value


def _choice(query: QueryDict, key: str, choices: dict[str, Any], blank: bool = False) -> str:
    value = query.get(key, "" if blank else str(DEFAULTS[key]))
    if blank and value == "":
        return ""
    if value not in choices:
        raise BadQuery(f"{key}: unknown {value!r}; expected one of {', '.join(choices)}")
    return value


def _params(policy: str, query: QueryDict) -> Any:
    params_type = POLICIES[policy].Params
    names = {f.name for f in param_fields(params_type)}
    values = {k: query[k] for k in names if query.get(k, "") != ""}
    try:
        return make_params(params_type, values)
    except (ValueError, TypeError) as exc:
        raise BadQuery(f"{policy}: {exc}") from None


def read_state(query: QueryDict, estimators: dict[str, Estimator] | None = None) -> ViewState:
    """The view state of a query string; raises BadQuery naming the bad parameter."""
    policy = _choice(query, "policy", POLICIES)
    compare = _choice(query, "compare", POLICIES, blank=True)
    return ViewState(
        policy=policy,
        params=_params(policy, query),
        budget=_tokens(query, "budget"),
        hard_limit=_tokens(query, "hard_limit"),
        estimator=_choice(query, "estimator", estimators or ESTIMATORS),
        compare=compare,
        compare_params=_params(compare, QueryDict()) if compare else None,
    )


def form_values(query: QueryDict) -> dict[str, str]:
    """What the controls show: the query's values (even bad ones, so the person sees what
    they asked for) over the defaults."""
    values = {k: str(v) for k, v in DEFAULTS.items()}
    values["compare"] = ""
    values.update({k: query[k] for k in (*DEFAULTS, "compare") if k in query})
    try:
        values["slider_max"] = str(max(int(values["hard_limit"]), int(values["budget"])))
    except ValueError:
        values["slider_max"] = str(DEFAULTS["hard_limit"])
    return values


_CACHE: OrderedDict[tuple[str, str, int], Skeleton] = OrderedDict()
_CACHE_SIZE = 64


def skeleton_of(run: Run, estimator: str, counter: Estimator | None = None) -> Skeleton:
    """The stored skeleton, kept in a small in-process cache, keyed by the run's public
    id (never reused, unlike a primary key after a deletion) and its revision (so a run
    that grows is read again)."""
    key = (run.public_id, estimator, run.revision)
    found = _CACHE.get(key)
    if found is None:
        row = RunSkeleton.objects.filter(
            run=run, estimator=estimator, revision=run.revision
        ).first()
        data = (
            row.data
            if row is not None
            else build_skeleton(run, estimator, counter or ESTIMATORS[estimator])
        )
        found = _CACHE[key] = from_dict(data)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    _CACHE.move_to_end(key)
    return found


@dataclass(frozen=True, slots=True)
class Analysis:
    state: ViewState
    main: Simulation
    problems: list[Problem]
    other: Simulation | None


def analyse(run: Run, state: ViewState, estimators: dict[str, Estimator] | None = None) -> Analysis:
    """Simulate the state's policy (and the compared one) on the run."""
    counter = (estimators or ESTIMATORS)[state.estimator]
    sk = skeleton_of(run, state.estimator, counter)
    count = counter.count
    limits = {"budget": state.budget, "hard_limit": state.hard_limit, "count": count}
    try:
        main = simulate(sk, state.policy, state.params, **limits)
        other = (
            simulate(sk, state.compare, state.compare_params, **limits) if state.compare else None
        )
    except ValueError as exc:  # a policy that cannot work with these settings says why
        raise BadQuery(f"{state.policy}: {exc}") from None
    return Analysis(state, main, detect(main), other)


def param_controls(state: ViewState) -> list[dict[str, Any]]:
    """The chosen policy's parameters as form controls: name, value, kind, help."""
    out = []
    for f in param_fields(POLICIES[state.policy].Params):
        value = getattr(state.params, f.name)
        kind = "bool" if isinstance(value, bool) else "text"
        out.append(
            {
                "name": f.name,
                "value": _text(value),
                "kind": kind,
                "default": _text(f.default if f.default is not dataclasses.MISSING else ""),
            }
        )
    return out


def figure(result: Analysis) -> dict[str, Any]:
    return composition_figure(result.main, result.problems, result.other)


def inspector_context(run: Run, result: Analysis, step: int, start: int) -> dict[str, Any]:
    """What the step inspector shows: a page of the request's items, the composition of
    the request, what changed since the previous one, where the cached prefix ends, and
    the neighbouring steps and problems."""
    sim = result.main
    record = sim.records[step]
    items = trace.inspect_items(run, sim, step, 0, 10**9)
    cached_until = _cached_until(items, record.cached)
    start = max(0, min(start, max(len(items) - INSPECT_PAGE, 0)))
    page = trace.inspect_items(run, sim, step, start, INSPECT_PAGE)
    later = [p.step for p in result.problems if p.step > step and p.severity != "info"]
    kept = dict(zip(KINDS, sim.kept_by_kind(step), strict=True))
    changes: dict[str, int] = {}
    for item in items:
        if item.change:
            key = "new messages" if item.change == "new" else f"newly {_WORDS[item.disposition]}"
            changes[key] = changes.get(key, 0) + 1
    return {
        "step": step,
        "record": record,
        "items": page,
        "item_start": start,
        "item_count": len(items),
        "page_size": INSPECT_PAGE,
        "cached_until": cached_until,
        "composition": sim.composition(step),
        "kept": kept,
        "changes": changes,
        "step_problems": [p for p in result.problems if p.step == step],
        "previous_step": step - 1 if step > 0 else None,
        "next_step": step + 1 if step + 1 < len(sim.records) else None,
        "next_problem": later[0] if later else None,
        "permalink": result.state.query(),
    }


_WORDS = {"k": "kept", "c": "cleared", "t": "truncated", "s": "summarized", "o": "offloaded"}
INSPECT_PAGE = 200


def _cached_until(items: list[trace.InspectItem], cached: int) -> int:
    """Position of the first item not read from the prompt cache."""
    total = 0
    for position, item in enumerate(items):
        if item.disposition in "ts":
            continue
        if total + item.tokens > cached:
            return position
        total += item.tokens
    return len(items)
