"""The view state of an analysis, read from the query string and written back to it:
policy, parameters, budget, hard limit, estimator, compared policy. Everything a view
shows is a function of (run, query string), so a copied URL reproduces the view."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.http import QueryDict

from contextsim.analysis.sweep import Config
from contextsim.counting.estimators import DEFAULT, ESTIMATORS, Estimator
from contextsim.engine.deferral import Deferral, parse_deferral
from contextsim.engine.policy import changed_params, make_params, param_fields
from contextsim.engine.simulate import MAX_TOKENS, REPLAY
from contextsim.registry import POLICIES
from contextsim.truth.costs import PRESETS
from contextsim.truth.prices import DEFAULT_BUDGET, DEFAULT_HARD_LIMIT, default_limits

DEFAULTS = {
    "policy": REPLAY,
    "budget": DEFAULT_BUDGET,
    "hard_limit": DEFAULT_HARD_LIMIT,
    "estimator": DEFAULT,
}
"""The defaults where a run says nothing (see defaults_for)."""


def defaults_for(model: str, context_window: int | None) -> dict[str, Any]:
    """A run's defaults: its hard limit is the window its log states (or its agent's
    rules say, model.Run.window_source), else its model's (genai-prices), else
    DEFAULTS'; the budget is DEFAULTS' but never above it."""
    hard_limit, budget, _ = default_limits(model, context_window)
    return {**DEFAULTS, "hard_limit": hard_limit, "budget": budget}


MAX_DEFER_CHARS = 8_000
"""The longest list of tools to defer a query may hold."""


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
    reconcile: bool = True
    """Whether sizes are reconciled with the run's measured usage (docs/truth.md)."""
    overhead: int | None = None
    """Unlogged tokens per request set by the person (None: fitted)."""
    scale: float | None = None
    """Provider tokens per estimator token set by the person (None: fitted)."""
    borrow: str = ""
    """The public id of a run of the same model whose fit this run borrows (a log
    without usage of its own), "" for none."""
    defaults: tuple[tuple[str, Any], ...] = tuple(DEFAULTS.items())
    """The defaults this state was read against: left out of its query string."""
    x_axis: str = "step"
    """The chart's x axis: "step" (request number) or "time" (as the log gives it)."""
    prices: str = ""
    """A preset the person named (truth.costs.PRESETS) to price every response at; ""
    for each response's own model's prices."""
    defer: str = ""
    """Tools whose definitions the state's policy defers (Anthropic's tool search), as a
    comma-separated list of names and `prefix*` patterns (contextsim.engine.deferral);
    "" for none."""
    remove: str = ""
    """Tools whose definitions the state's policy does not send at all (never called in
    the log), as `defer`."""

    @property
    def deferral(self) -> Deferral | None:
        """The state's deferral and removal (None for neither); checked when read."""
        return parse_deferral(self.defer, removed=self.remove)

    def query(self, **override: Any) -> str:
        """The query string of this state, defaults left out (short permalinks)."""
        items = {
            "policy": self.policy,
            "budget": self.budget,
            "hard_limit": self.hard_limit,
            "estimator": self.estimator,
            "compare": self.compare,
            "reconcile": "" if self.reconcile else "off",
            "overhead": self.overhead,
            "scale": self.scale,
            "borrow": self.borrow,
            "x": "" if self.x_axis == "step" else self.x_axis,
            "prices": self.prices,
            "defer": self.defer,
            "remove": self.remove,
            **{k: _text(v) for k, v in changed_params(self.params).items()},
            **override,
        }
        q = QueryDict(mutable=True)
        for key, value in items.items():
            if value in ("", None) or dict(self.defaults).get(key) == value:
                continue
            q[key] = str(value)
        return q.urlencode()


def config_query(config: Config, estimator: str, hard_limit: int) -> str:
    """The dashboard query string of a sweep's configuration."""
    # Explicit: the runs of one sweep need not share their defaults.
    state = ViewState(
        config.policy,
        config.make_params(),
        config.budget,
        hard_limit,
        estimator,
        "",
        None,
        defer=config.defer,
    )
    return replace(state, defaults=()).query()


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(value)
    if value is None:
        return "none"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _tokens(query: QueryDict, key: str, defaults: dict[str, Any]) -> int:
    raw = query.get(key, "")
    if raw == "":
        return int(defaults[key])
    try:
        value = int(raw.replace(",", "").replace("_", ""))
    except ValueError:
        raise BadQuery(f"{key}: expected a whole number of tokens, got {raw!r}") from None
    if not 0 < value <= MAX_TOKENS:
        raise BadQuery(f"{key}: expected between 1 and {MAX_TOKENS:,} tokens, got {value:,}")
    return value


def _choice(query: QueryDict, key: str, choices: Mapping[str, Any], blank: bool = False) -> str:
    value = query.get(key, "" if blank else str(DEFAULTS.get(key, "")))
    if blank and value == "":
        return ""
    if value not in choices:
        raise BadQuery(f"{key}: unknown {value!r}; expected one of {', '.join(choices)}")
    return value


def _params(policy: str, query: QueryDict) -> Any:
    params_type = POLICIES[policy].Params
    names = {f.name for f in param_fields(params_type)}
    values = {k: str(query[k]) for k in names if query.get(k, "") != ""}
    try:
        return make_params(params_type, values)
    except (ValueError, TypeError) as exc:
        raise BadQuery(f"{policy}: {exc}") from None


def read_state(
    query: QueryDict,
    estimators: dict[str, Estimator] | None = None,
    defaults: dict[str, Any] | None = None,
) -> ViewState:
    """The view state of a query string, over `defaults` (DEFAULTS unless a run's, see
    defaults_for); raises BadQuery naming the bad parameter."""
    defaults = defaults or DEFAULTS
    policy = _choice(query, "policy", POLICIES)
    compare = _choice(query, "compare", POLICIES, blank=True)
    return ViewState(
        policy=policy,
        params=_params(policy, query),
        budget=_tokens(query, "budget", defaults),
        hard_limit=_tokens(query, "hard_limit", defaults),
        estimator=_choice(query, "estimator", estimators or ESTIMATORS),
        compare=compare,
        compare_params=_params(compare, QueryDict()) if compare else None,
        reconcile=_reconcile(query),
        overhead=_overhead(query),
        scale=_scale(query),
        borrow=query.get("borrow", "").strip()[:16],
        defaults=tuple(defaults.items()),
        x_axis=_x_axis(query),
        prices=_prices(query),
        defer=_tool_list(query, "defer"),
        remove=_tool_list(query, "remove"),
    )


def _tool_list(query: QueryDict, key: str) -> str:
    """The query's `key` ("defer" or "remove"): tool names and patterns, checked and
    written back canonically (contextsim.engine.deferral.parse_deferral)."""
    raw = query.get(key, "")
    if len(raw) > MAX_DEFER_CHARS:
        raise BadQuery(f"{key}: at most {MAX_DEFER_CHARS:,} characters, got {len(raw):,}")
    try:
        found = parse_deferral(raw) if key == "defer" else parse_deferral("", removed=raw)
    except ValueError as exc:
        raise BadQuery(str(exc)) from None
    if found is None:
        return ""
    return ",".join(found.patterns if key == "defer" else found.removed)


def _prices(query: QueryDict) -> str:
    raw = query.get("prices", "")
    if raw and raw not in PRESETS:
        raise BadQuery(f"prices: expected one of {', '.join(PRESETS)}, got {raw!r}")
    return raw


def _x_axis(query: QueryDict) -> str:
    raw = query.get("x", "") or "step"
    if raw not in ("step", "time"):
        raise BadQuery(f"x: expected step or time, got {raw!r}")
    return raw


def _reconcile(query: QueryDict) -> bool:
    raw = query.get("reconcile", "")
    if raw not in ("", "fit", "off"):
        raise BadQuery(f"reconcile: expected fit or off, got {raw!r}")
    return raw != "off"


def _overhead(query: QueryDict) -> int | None:
    raw = query.get("overhead", "").replace(",", "").replace("_", "")
    if raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise BadQuery(f"overhead: expected a whole number of tokens, got {raw!r}") from None
    if not 0 <= value <= MAX_TOKENS:
        raise BadQuery(f"overhead: expected between 0 and {MAX_TOKENS:,} tokens, got {value:,}")
    return value


def _scale(query: QueryDict) -> float | None:
    raw = query.get("scale", "")
    if raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BadQuery(f"scale: expected a ratio such as 1.2, got {raw!r}") from None
    if not 0 < value <= 100:
        raise BadQuery(f"scale: expected a ratio above 0 and at most 100, got {raw!r}")
    return value


def form_values(query: QueryDict, defaults: dict[str, Any] | None = None) -> dict[str, str]:
    """What the controls show: the query's values (even bad ones, so the person sees what
    they asked for) over the defaults."""
    defaults = defaults or DEFAULTS
    values = {k: str(v) for k, v in defaults.items()}
    extra = (
        "compare",
        "reconcile",
        "overhead",
        "scale",
        "borrow",
        "x",
        "prices",
        "defer",
        "remove",
    )
    values.update(dict.fromkeys(extra, ""))
    values.update({k: str(query[k]) for k in (*DEFAULTS, *extra) if k in query})
    try:
        top = max(int(values["hard_limit"]), int(values["budget"]))
    except ValueError:
        top = int(str(defaults["hard_limit"]))
    values["slider_max"] = str(top)
    values["slider_step"] = str(slider_step(top))
    return values


def slider_step(top: int) -> int:
    """The budget slider's step for a range up to `top` tokens: about 200 stops over
    it, at a round figure (1, 2 or 5 times a power of ten; at least 100)."""
    raw = max(top / 200, 100.0)
    power: int = 10 ** (len(str(int(raw))) - 1)
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def param_of(policy: str, message: str) -> str:
    """The parameter of `policy` a BadQuery's message is about ("" when none): the one
    it opens with (after the policy's name), else the first it names."""
    if policy not in POLICIES:
        return ""
    names = [f.name for f in param_fields(POLICIES[policy].Params)]
    text = message.removeprefix(f"{policy}: ")
    opening = [n for n in names if text.startswith(n)]
    if opening:
        return max(opening, key=len)
    named = [(text.find(n), -len(n), n) for n in names if n in text]
    return min(named)[2] if named else ""


def _control_kind(hint: Any) -> tuple[str, bool]:
    """The form control of a parameter's type: bool, int, float or text, and whether
    it may be None (an empty field)."""
    args = typing.get_args(hint)
    optional = type(None) in args
    if optional:
        hint = next(a for a in args if a is not type(None))
    if hint is bool:
        return "bool", optional
    if hint is int or hint is float:
        return hint.__name__, optional
    return "text", optional


def param_controls(
    state: ViewState,
    errors: Mapping[str, str] | None = None,
    typed: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The chosen policy's parameters as form controls: name, value, kind (bool, int,
    float or text), whether empty means none, the default, and the error of a value
    that could not be used (`errors`; the control then shows what was `typed`)."""
    errors = errors or {}
    hints = typing.get_type_hints(POLICIES[state.policy].Params)
    out = []
    for f in param_fields(POLICIES[state.policy].Params):
        value = getattr(state.params, f.name)
        kind, optional = _control_kind(hints[f.name])
        default = f.default if f.default is not dataclasses.MISSING else ""
        shown = "" if value is None and kind != "text" else _text(value)
        if f.name in errors and typed is not None:
            shown = str(typed.get(f.name, shown))
        out.append(
            {
                "name": f.name,
                "value": shown,
                "kind": kind,
                "optional": optional,
                "default": "none" if default is None else _text(default),
                "error": errors.get(f.name, ""),
            }
        )
    return out
