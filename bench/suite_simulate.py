"""Suite `simulate`: policies on long generated runs, LangChain's trimming, the script rule.

Targets (DESIGN.md 4.4 and the benchmark issue):
- every registered policy simulates a 10,000-step run in <= 0.2 s, and takes at most
  12x its 1,000-step time (near-linear: requests grow, simulation must not);
- `langchain_trim` over every step of the 1,000-step run is >= 100x faster than calling
  `langchain_core.messages.trim_messages` once per step on the same run;
- the `script` estimator counts ~1 MB of mixed-script text >= 5x faster than o200k.

Skeletons are built once per run, outside the timed regions, with `chars4`. Policy and
estimator timings are the best of 5 (o200k: best of 3); a policy's two sizes are timed
in alternation, so load from other processes hits both alike. The per-step
trim_messages loop takes about 10 s, so it is timed once.
"""

from __future__ import annotations

import gc
import json
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.report import Figure, best_of, best_of_each, timed
from bench.synthetic import long_run, mixed_script_text
from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.counting.skeleton import Skeleton
from contextsim.engine.simulate import Simulation, simulate
from contextsim.model import Run
from contextsim.registry import POLICIES

BUDGET = 400_000
HARD_LIMIT = 1_000_000
SMALL, LARGE = 1_000, 10_000
TIME_TARGET = 0.2
"""Seconds for one policy over the 10,000-step run."""
RATIO_TARGET = 12.0
"""Time(10,000 steps) / time(1,000 steps), at most."""
TRIM_TARGET = 100.0
"""Speed-up of langchain_trim over per-step trim_messages, at least."""
SCRIPT_TARGET = 5.0
"""Speed-up of the script rule over o200k, at least."""
MIXED_CHARS = 1_000_000
REPEATS = 5


def _say(text: str) -> None:
    print(f"  [simulate] {text}", file=sys.stderr, flush=True)


def _simulation(sk: Skeleton, policy: str, scale: float = 1.0) -> Callable[[], object]:
    count = ESTIMATORS["chars4"].count
    budget, hard = round(BUDGET * scale), round(HARD_LIMIT * scale)
    return lambda: simulate(sk, POLICIES[policy], budget=budget, hard_limit=hard, count=count)


SAME_WORK = SMALL / LARGE
"""Budget scale for the small run in the growth ratio. With one fixed budget the small
run spends a quarter of its requests under budget (the cheapest case) while the large
run needs later stages on most of them, so a fixed-budget ratio mixes growth with a
change of work per request. Scaling the small run's budget and hard limit by its length
keeps the stages alike, so the ratio measures growth alone; an algorithm that copies
each request would still show about 100x. The fixed-budget ratio is printed too, and
is the one held to the target when its stages are the closer to the large run's (a
policy that acts at a fixed size of its own, which no budget scales)."""


def _build_figures(small: Run) -> tuple[list[Figure], Skeleton, Skeleton]:
    """Build both skeletons (timed once; the 10,000-step run is dropped after), and
    the o200k skeleton of the small run, informative."""
    chars4 = ESTIMATORS["chars4"]
    seconds_small, sk_small = timed(lambda: build(small, chars4))
    seconds_large, sk_large = _build_large()
    seconds_o200k, _ = timed(lambda: build(small, ESTIMATORS["o200k"]))
    assert isinstance(sk_small, Skeleton) and isinstance(sk_large, Skeleton)
    figures = [
        Figure(f"build chars4, {SMALL:,} steps", seconds_small, note=_size(sk_small)),
        Figure(f"build chars4, {LARGE:,} steps", seconds_large, note=_size(sk_large)),
        Figure(f"build o200k, {SMALL:,} steps", seconds_o200k, note="once, cold memo"),
    ]
    return figures, sk_small, sk_large


def _build_large() -> tuple[float, object]:
    """(seconds, skeleton) of the 10,000-step run; the run itself is freed on return."""
    large = long_run(LARGE)
    return timed(lambda: build(large, ESTIMATORS["chars4"]))


def _size(sk: Skeleton) -> str:
    return f"{sk.size:,} messages, {sum(sk.tokens) / 1e6:.1f}M tokens"


def policy_figures(sk_small: Skeleton, sk_large: Skeleton) -> list[Figure]:
    """Time and growth of every policy registered now (a policy that raises is a miss)."""
    figures: list[Figure] = []
    for name in list(POLICIES):
        _say(f"policy {name}")
        try:
            small, large, same = best_of_each(
                (
                    _simulation(sk_small, name),
                    _simulation(sk_large, name),
                    _simulation(sk_small, name, SAME_WORK),
                ),
                REPEATS,
            )
        except Exception as error:  # a policy still being written must not stop the rest
            note = f"raised {type(error).__name__}: {error}"[:120]
            figures.append(Figure(f"{name}: {LARGE:,} steps", None, "s", ("<=", TIME_TARGET), note))
            continue
        shares = {scale: _shares(sk_small, name, scale) for scale in (1.0, SAME_WORK)}
        big = _shares(sk_large, name)
        # The small run's budget scaled keeps its stages like the large run's, unless
        # the policy acts at a fixed size of its own (anthropic_compaction's 150,000-
        # token trigger, at least 50,000): then the one budget does.
        alike = min(shares, key=lambda scale: (_apart(shares[scale], big), scale != SAME_WORK))
        same = same if alike == SAME_WORK else small
        how = "budget scaled" if alike == SAME_WORK else "one budget: stages alike"
        stages = f"{how}; stages {_said(shares[alike])} | {_said(big)}"
        fixed = f"stages {_said(shares[1.0])} | {_said(big)}"
        figures += [
            Figure(f"{name}: {SMALL:,} steps", small),
            Figure(f"{name}: {LARGE:,} steps", large, "s", ("<=", TIME_TARGET)),
            Figure(f"{name}: {LARGE:,} / {SMALL:,}, one budget", large / small, "x", None, fixed),
            Figure(
                f"{name}: {LARGE:,} / {SMALL:,}, same work per request",
                large / same,
                "x",
                ("<=", RATIO_TARGET),
                stages,
            ),
        ]
    return figures


def _shares(sk: Skeleton, policy: str, scale: float = 1.0) -> dict[str, float]:
    """The share of steps by the stage the policy needed (untimed): a policy does more
    work per step in later stages, which a size ratio reflects."""
    sim = _simulation(sk, policy, scale)()
    assert isinstance(sim, Simulation)
    return {stage: n / sk.steps for stage, n in Counter(r.stage for r in sim.records).items()}


def _apart(a: dict[str, float], b: dict[str, float]) -> float:
    """How far apart two stage mixes are: the share of steps that would change stage."""
    return sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in {*a, *b}) / 2


def _said(shares: dict[str, float]) -> str:
    """E.g. "clear 88%, none 12%" (the three largest)."""
    top = sorted(shares.items(), key=lambda item: -item[1])[:3]
    return ", ".join(f"{stage} {share:.0%}" for stage, share in top)


def to_langchain(run: Run) -> tuple[list[Any], list[int]]:
    """The run as LangChain messages, and for every message index i of the run the
    number of LangChain messages standing for run.messages[:i] (a history end)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    ends = [0]
    for m in run.messages:
        if m.role == "system":
            out.append(SystemMessage(m.text))
        elif m.role == "assistant":
            calls = [
                {"name": c.name, "args": json.loads(c.arguments or "{}"), "id": c.id}
                for c in m.tool_calls
            ]
            out.append(AIMessage(m.text, tool_calls=calls))
        elif m.tool_results:
            for r in m.tool_results:
                status = "error" if r.is_error else "success"
                out.append(ToolMessage(r.text, tool_call_id=r.call_id, status=status))
        else:
            out.append(HumanMessage(m.text))
        ends.append(len(out))
    return out, ends


def trim_figures(small: Run, sk_small: Skeleton) -> list[Figure]:
    """langchain_trim over every step vs trim_messages once per step, same process."""
    name = f"langchain_trim vs trim_messages, {SMALL:,} steps"
    if "langchain_trim" not in POLICIES:
        print("langchain_trim: not registered", flush=True)
        return [Figure(name, None, "x", (">=", TRIM_TARGET), "langchain_trim: not registered")]
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    ours = best_of(_simulation(sk_small, "langchain_trim"), REPEATS)
    history, ends = to_langchain(small)

    def per_step() -> None:
        for end in sk_small.ends:
            trim_messages(
                history[: ends[end]],
                max_tokens=BUDGET,
                strategy="last",
                token_counter=count_tokens_approximately,
                include_system=True,
                start_on="human",
            )

    _say("trim_messages once per step (about 10 s)")
    theirs, _ = timed(per_step)
    return [
        Figure(f"trim_messages per step, {SMALL:,} steps", theirs, note="timed once"),
        Figure(f"langchain_trim, {SMALL:,} steps", ours),
        Figure(name, theirs / ours, "x", (">=", TRIM_TARGET)),
    ]


def script_figures() -> list[Figure]:
    """The script rule vs tiktoken o200k on ~1 MB of mixed-script text."""
    text = mixed_script_text(MIXED_CHARS)
    script, o200k = ESTIMATORS["script"], ESTIMATORS["o200k"]
    o200k.count("warm up: load the encoding outside the timing")
    seconds_script = best_of(lambda: script.count(text), REPEATS)
    seconds_o200k = best_of(lambda: o200k.count(text), 3)
    counts = f"script {script.count(text):,} tokens, o200k {o200k.count(text):,}"
    return [
        Figure(f"script, {len(text) / 1e6:.1f} MB mixed text", seconds_script),
        Figure(f"o200k, {len(text) / 1e6:.1f} MB mixed text", seconds_o200k),
        Figure(
            "script vs o200k speed-up",
            seconds_o200k / seconds_script,
            "x",
            (">=", SCRIPT_TARGET),
            counts,
        ),
    ]


def run() -> list[Figure]:
    """Every figure of the suite, in the order printed."""
    _say(f"generating and building the {SMALL:,}- and {LARGE:,}-step runs")
    small = long_run(SMALL)
    figures, sk_small, sk_large = _build_figures(small)
    # The skeletons live as long as the process, as in a server (`serve` freezes what it
    # has loaded too): keep them out of the collector's full scans, whose cost grows
    # with everything alive and would be charged to whichever simulation triggers one.
    gc.collect()
    gc.freeze()
    figures += policy_figures(sk_small, sk_large)
    figures += trim_figures(small, sk_small)
    _say("script rule vs o200k")
    figures += script_figures()
    return figures
