"""An analysis of a stored run: the simulations a view state asks for, the problems
found, the chart's figure and what the step inspector shows of one step."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from contextsim.analysis.compactions import CompactionEvent, Limit
from contextsim.analysis.findings import findings
from contextsim.analysis.problems import Problem
from contextsim.analysis.tool_usage import ToolShare, by_server, split_definitions, tool_breakdown
from contextsim.counting.estimators import ESTIMATORS, STAND_INS, Estimator
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.deferral import Deferral, deferred_names, defined_tools
from contextsim.engine.policy import policy_trigger
from contextsim.engine.replay import measured_total
from contextsim.engine.simulate import (
    REPLAY,
    Simulation,
    reconciliation,
    scored_on,
    simulate,
)
from contextsim.ingest.captures import FORMAT as CAPTURED
from contextsim.model import KINDS
from contextsim.registry import POLICIES, PROVIDERS, own_trigger
from contextsim.truth.compaction_points import CompactionPoint, compaction_points
from contextsim.truth.costs import PRESETS, Prices
from contextsim.truth.prices import (
    assumed_prices,
    model_facts,
    unpriced_models,
)
from contextsim.truth.reconcile import Reconciliation
from webapp.dashboard import trace
from webapp.dashboard.charts.composition import composition_figure
from webapp.dashboard.charts.timeline import by_time
from webapp.dashboard.state import BadQuery, ViewState
from webapp.models import Run
from webapp.runs.reads import get_message
from webapp.store.reads import run_facts, skeleton_of


@dataclass(frozen=True, slots=True)
class Analysis:
    state: ViewState
    main: Simulation
    problems: list[Problem]
    other: Simulation | None
    reconciliation: Reconciliation | None = None
    prices: Prices | None = None
    measured_cost: float | None = None
    baseline: Simulation | None = None
    """What was sent (as_logged), when the state's policy is a what-if."""
    compaction_points: int = 0
    """Measured compaction requests among the points the fit was made on."""
    stand_in: str = ""
    """The estimator that counted instead of the state's, whose counts the run's import
    is still making (estimators.STAND_INS); "" when the state's counted."""
    trigger: tuple[int, str] | None = None
    """The tokens at which the state's policy compacts this run, and where that figure
    comes from (engine.policy.policy_trigger); None for a policy without one."""
    unpriced: tuple[str, ...] = ()
    """Models that answered some responses and have no price (truth.prices
    unpriced_models): their responses are not in the measured cost."""
    undeferred: Simulation | None = None
    """The state's policy with every tool defined, when the state defers some (what
    the deferral saves is the difference); None otherwise or for a page `alone`."""
    defined: tuple[str, ...] = ()
    """The tools whose definitions the log holds (a capture's), in the order defined:
    those the state may defer."""
    events: tuple[CompactionEvent, ...] = ()
    """Every compaction of the state's policy on the run, in step order
    (analysis.compactions)."""


def tool_parts(
    result: Analysis, step: int | None = None, run: Run | None = None
) -> tuple[list[ToolShare], list[ToolShare]]:
    """Each tool's part of what the run sent (and of request `step`), the largest
    first, its definition's share included (when `run` is given) where the log holds
    the definitions (a capture's: Skeleton.definitions), and the same by MCP server
    (analysis.tool_usage)."""
    tools = tool_breakdown(result.main, result.prices or PRESETS["anthropic"], step)
    if run is not None:
        tools = split_definitions(tools, defined_tools(result.main.skeleton))
    return tools, by_server(tools)


def run_prices(run: Run, named: str = "") -> Prices:
    """The preset the person `named` (every response at it), else the run's model's
    prices from genai-prices (each response at its own model's), else the preset of
    its provider, labelled as standing in."""
    if named:
        return replace(PRESETS[named], named=True, label=f"{PRESETS[named].label}, named")
    facts = model_facts(run.model)
    if facts is not None:
        return facts.prices
    return assumed_prices(run.model, PRESETS[PROVIDERS.get(run.format, "anthropic")])


def analyse(
    run: Run,
    state: ViewState,
    estimators: dict[str, Estimator] | None = None,
    lender: Run | None = None,
    *,
    alone: bool = False,
    baseline: bool = True,
) -> Analysis:
    """Simulate the state's policy (and, unless `alone`, the compared one, and what was
    sent unless not `baseline`) on the run, sizes reconciled with its measured usage
    unless the state says not to, or with the fit of `lender` (a run of the same model)
    when given (docs/truth.md). A page that shows the state's policy only (the ledger, a
    step, an export, a frontier's point) asks for it `alone`: one simulation, not three."""
    stand_in = STAND_INS.get(state.estimator, "") if state.estimator in run.counting else ""
    used = stand_in or state.estimator
    counter = (estimators or ESTIMATORS)[used]
    sk = skeleton_of(run, used, counter)
    count = counter.count
    prices = run_prices(run, state.prices)
    rec = None
    points: tuple[CompactionPoint, ...] = ()
    if state.reconcile and lender is not None:
        rec = _borrowed(lender, state, counter, sk, prices)
    elif state.reconcile:
        points = _compaction_points(run, sk, used, counter)
        rec = run_reconciliation(run, sk, counter, points, state.overhead, state.scale)
    limits = partial(
        simulate,
        budget=state.budget,
        hard_limit=state.hard_limit,
        count=count,
        prices=prices,
        reconcile=rec,
    )
    deferral = _deferral(state, sk)
    try:
        main = limits(sk, POLICIES[state.policy], state.params, deferral=deferral)
        other = (
            limits(sk, POLICIES[state.compare], state.compare_params)
            if state.compare and not alone
            else None
        )
        undeferred = (
            limits(sk, POLICIES[state.policy], state.params)
            if deferral is not None and not alone
            else None
        )
        sent = (
            limits(sk, POLICIES[REPLAY])
            if REPLAY not in (state.policy, state.compare) and baseline and not alone
            else None
        )
    except ValueError as exc:  # a policy that cannot work with these settings says why
        raise BadQuery(f"{state.policy}: {exc}") from None
    cost = measured_total(sk, prices)
    unpriced = tuple(unpriced_models(run.model, sk.usage, prices))
    trigger = policy_trigger(POLICIES[state.policy], main.skeleton, main.params)
    own = own_trigger(run.format)
    refused = run_facts(run).rejections
    limit = _window(run, state)
    events, problems = findings(main, POLICIES[state.policy], own, limit, prices, refused=refused)
    return Analysis(
        state,
        main,
        problems,
        other,
        rec,
        prices,
        cost,
        sent,
        len(points),
        stand_in,
        trigger,
        unpriced,
        undeferred,
        tuple(defined_tools(sk)),
        tuple(events),
    )


def _deferral(state: ViewState, sk: Skeleton) -> Deferral | None:
    """The state's deferral, checked against the run's definitions; raises BadQuery
    (about "defer") for one the run or the policy cannot take."""
    deferral = state.deferral
    if deferral is None:
        return None
    if state.policy == REPLAY:
        raise BadQuery(
            f"{'defer' if state.defer else 'remove'}: as_logged replays what was sent; "
            "deferring or removing tools is a what-if: choose a policy (the run's own, or none)"
        )
    try:
        deferred_names(sk, deferral)  # checks the tools removed too
    except ValueError as exc:
        raise BadQuery(str(exc)) from None
    return deferral


def _window(run: Run, state: ViewState) -> Limit:
    """The hard limit of the state: the run's window and its source, unless set."""
    window = dict(state.defaults).get("hard_limit")
    if state.hard_limit == window:
        return Limit(state.hard_limit, run.window_said)
    return Limit(state.hard_limit, "the hard limit set on this page")


def run_reconciliation(
    run: Run,
    sk: Skeleton,
    counter: Estimator,
    points: tuple[CompactionPoint, ...] | None = None,
    overhead: int | None = None,
    scale: float | None = None,
) -> Reconciliation | None:
    """The run's reconciliation as every page shows it (the dashboard, a sweep's cell,
    an export): fitted on its measured requests and its compaction requests (`points`,
    found when not given), exact for a capture, with the scale of a captured run of the
    same model where its own requests cannot tell one; `overhead` and `scale` set by
    hand in place of the fitted terms."""
    if points is None:
        points = _compaction_points(run, sk, sk.estimator, counter)
    exact = run.format == CAPTURED
    reference = None if exact else _reference(run, counter, sk)
    rec = reconciliation(
        sk,
        overhead=overhead,
        scale=scale,
        points=points,
        exact=exact,
        reference=None if reference is None else reference[0],
    )
    if rec is not None and rec.source == "reference" and reference is not None:
        rec = replace(rec, source=f"scale of the captured run {reference[1][:80]!r}")
    return rec


def _compaction_points(
    run: Run, sk: Skeleton, estimator: str, counter: Estimator
) -> tuple[CompactionPoint, ...]:
    """The fit points of the run's compaction requests (its owner's runs that wrote its
    logged compactions' summaries), in the order they were imported."""
    if not sk.compactions or not run.session_id or run.compaction_request:
        return ()
    requests = Run.objects.filter(
        owner_id=run.owner_id, compaction_request=True, parent_session_id=run.session_id
    ).order_by("id")
    return compaction_points(sk, [skeleton_of(r, estimator, counter) for r in requests])


def _reference(run: Run, counter: Estimator, sk: Skeleton) -> tuple[float, str] | None:
    """The scale of the owner's newest captured run of the same model with measured
    usage (its requests are exact: its scale is the provider tokenizer's ratio alone),
    and its title; None when there is none."""
    if not run.model or run.owner_id is None:
        return None
    captured = (
        Run.objects.filter(
            owner_id=run.owner_id, format=CAPTURED, model=run.model, requests_with_usage__gte=1
        )
        .order_by("-last_append", "-id")
        .first()
    )
    if captured is None:
        return None
    theirs = reconciliation(skeleton_of(captured, sk.estimator, counter), exact=True)
    return None if theirs is None else (theirs.scale, captured.title)


def _borrowed(
    lender: Run, state: ViewState, counter: Estimator, sk: Skeleton, prices: Prices
) -> Reconciliation | None:
    """The lender's fit (its overhead and scale under the same estimator), with the
    state's own overhead or scale over it, scored on this run's measured requests."""
    theirs = reconciliation(skeleton_of(lender, sk.estimator, counter))
    if theirs is None:
        raise BadQuery(f"borrow: {lender.title!r} has no measured usage to fit")
    chosen = Reconciliation(
        state.scale if state.scale is not None else theirs.scale,
        state.overhead if state.overhead is not None else theirs.overhead,
        source=f"borrowed from {lender.title[:80]}",
    )
    return scored_on(sk, chosen)


def figure(result: Analysis, run: Run | None = None) -> dict[str, Any]:
    """The composition chart; against time when the state asks for it (each step at the
    time its response began, as logged)."""
    title = ""
    if run is not None:
        state = result.state
        title = f"{run.title[:80]} · {state.policy} · {result.main.skeleton.estimator} tokens"
    drawn = composition_figure(result.main, result.problems, result.other, result.events, title)
    if run is not None:
        drawn["layout"]["meta"]["filename"] = f"contextsim-{run.public_id}-{result.state.policy}"
    if result.state.x_axis != "time" or run is None:
        return drawn
    responses = result.main.skeleton.responses
    times = trace.message_times(run, [r for r in responses if r is not None])
    stamps = [
        times[r].isoformat().replace("+00:00", "Z") if r is not None and r in times else None
        for r in responses
    ]
    return by_time(drawn, stamps)


def inspector_context(run: Run, result: Analysis, step: int, start: int) -> dict[str, Any]:
    """What the step inspector shows: a page of the request's items (cards: a run of
    messages left out the same way is one card, so a compaction's summary follows the
    history it replaced on the first page), the composition of the request (all the
    provider counted: the unlogged part too), its compaction, what changed since the
    previous one, where the cached prefix ends, and the neighbouring steps and
    problems. `start` is the position of the page's first item."""
    sim = result.main
    record = sim.records[step]
    items = trace.inspect_items(run, sim, step, 0, 10**9, with_text=False)
    cached_until = _cached_until(items, sim.estimated_cached(step))
    every = item_rows(items, 0, cached_until)
    found = next((n for n, row in enumerate(every) if row.position >= start), None)
    first = found if found is not None else max(len(every) - INSPECT_PAGE, 0)
    chosen = every[first : first + INSPECT_PAGE]
    begin = chosen[0].position if chosen else 0
    end = chosen[-1].position + len(chosen[-1].items) if chosen else 0
    page = trace.inspect_items(run, sim, step, begin, end - begin)
    later = sorted(p.step for p in result.problems if p.step > step)
    kept = dict(zip(KINDS, sim.kept_by_kind(step), strict=True))
    changes: dict[str, int] = {}
    for item in items:
        if item.change:
            key = "new messages" if item.change == "new" else f"newly {_WORDS[item.disposition]}"
            changes[key] = changes.get(key, 0) + 1
    response = sim.skeleton.responses[step]
    answer = trace.message_text(get_message(run, response).parts) if response is not None else None
    rec = sim.reconciliation
    scale = rec.scale if rec is not None else 1.0
    tools, servers = tool_parts(result, step, run)
    summary = _summary_item(items, set(sim.skeleton.summaries))
    return {
        "step": step,
        "record": record,
        "response_index": response,
        "response_text": answer[:PREVIEW] if answer is not None else None,
        "response_cut": answer is not None and len(answer) > PREVIEW,
        "items": page,
        "rows": item_rows(page, begin, cached_until),
        "item_start": begin,
        "item_end": end,
        "item_count": len(items),
        "page_size": INSPECT_PAGE,
        "earlier_from": every[max(first - INSPECT_PAGE, 0)].position if first else None,
        "later_from": end if first + INSPECT_PAGE < len(every) else None,
        "cached_until": cached_until,
        "composition": sim.composition(step),
        "kept": {k: round(scale * v) for k, v in kept.items()},
        "scaled": {k: round(scale * v) for k, v in sim.composition(step).items()},
        "unlogged": record.sent - round(scale * record.estimated) if rec is not None else 0,
        "scaled_estimate": round(scale * record.estimated),
        "changes": changes,
        "step_problems": [p for p in result.problems if p.step == step],
        "event": next((e for e in result.events if e.step == step), None),
        "summary_row": summary,
        "summary_tokens": items[summary].tokens if summary is not None else 0,
        "summary_position": (
            sum(i.disposition in "ts" for i in items[:summary]) if summary is not None else 0
        ),
        "step_tools": [t for t in tools if t.step_tokens],
        "step_servers": [t for t in servers if t.step_tokens],
        "usage": sim.skeleton.usage[step],
        "previous_step": step - 1 if step > 0 else None,
        "next_step": step + 1 if step + 1 < len(sim.records) else None,
        "next_problem": later[0] if later else None,
        "permalink": result.state.query(),
    }


def _summary_item(items: list[trace.InspectItem], summaries: set[int]) -> int | None:
    """Position of the summary the request sends: the log's (a message that holds a
    compaction's summary) or the one the policy inserts; None when it sends none."""
    for position, item in enumerate(items):
        logged = item.index is not None and item.index in summaries and item.disposition == "k"
        if logged or (item.index is None and item.kind == "summary"):
            return position
    return None


PREVIEW = 4_000
"""Characters of the response shown before "show all"."""


GROUP_FROM = 3
"""Consecutive messages left out of a request, this many or more, are shown as one
collapsed group, not one card each."""


@dataclass(frozen=True, slots=True)
class ItemRow:
    """One card of the inspector's list: a single item, or a run of items left out the
    same way (`items` holds them all). `position` is the first item's position in the
    request; `cache_line` whether the cached prefix ends just before it."""

    items: list[trace.InspectItem]
    position: int
    cache_line: bool

    @property
    def group(self) -> bool:
        return len(self.items) > 1

    @property
    def first(self) -> trace.InspectItem:
        return self.items[0]

    @property
    def last(self) -> trace.InspectItem:
        return self.items[-1]

    @property
    def tokens(self) -> int:
        return sum(i.original or i.tokens for i in self.items)


def item_rows(page: list[trace.InspectItem], start: int, cached_until: int) -> list[ItemRow]:
    """The page's items as cards: GROUP_FROM or more consecutive items left out the same
    way (truncated or summarized) become one group; the cache line is never inside one
    (left-out items are not sent, so the cached prefix cannot end among them)."""
    rows: list[ItemRow] = []
    i = 0
    while i < len(page):
        j = i + 1
        if page[i].disposition in "ts":
            while j < len(page) and page[j].disposition == page[i].disposition:
                j += 1
        if j - i < GROUP_FROM:
            j = i + 1
        position = start + i
        rows.append(ItemRow(page[i:j], position, position == cached_until))
        i = j
    return rows


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
