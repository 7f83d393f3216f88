"""Deterministic demo runs that reproduce the seed incidents (DESIGN.md 4.8).

Demos, by registry key:
- ``main``: the main agent (session ``demo-main``), 4 user turns of coding work with
  read_file, grep, edit_file, run_tests and `task` calls that start the subagents.
- ``subagents``: 8 subagents (``demo-subagent-1`` ... ``-8``, parent ``demo-main``), each
  told once to read 40 long Russian chapters; one read_file round per chapter, then a
  final answer.
- ``early-stop``: a subagent (``demo-early-stop``) that reads 2 of 40 chapters and
  stops "to save space" at about 100,000 tokens, far under a 400,000 budget.

Measured usage is computed, not recorded: every assistant message's `Usage` holds the
tiktoken o200k count of the history before it (the UI must say so). See `build`.

How the subagent logs end: with a 1,000,000 hard limit and no context management, a
real subagent's requests would have been rejected from about chapter 23 on. A log cut
at the first rejection would only show that one policy's outcome, so these runs show
what each agent *would* do given every request: all 40 rounds and the final answer
are in the saved history, and usage over the hard limit is still the count of what
would have been sent (up to about 1.79 million). Simulating a policy over the run
decides which requests are rejected: `none` and `turns` reject, `mythex` does not.

Everything is a function of `chapter_chars` alone: no clock, no global random state
(each generator seeds its own `random.Random` from fixed strings), so two calls give
equal runs. At the default size all demos take a few seconds to build, most of it
o200k counting of the 322 chapters read.
"""

from __future__ import annotations

from collections.abc import Callable

from contextsim.counting.estimators import CountMemo
from contextsim.model import Run
from contextsim.systems.seed.demo.build import FORMAT, MODEL
from contextsim.systems.seed.demo.main import main_runs
from contextsim.systems.seed.demo.subagents import (
    CHAPTERS_PER_SUBAGENT,
    EARLY_STOP_AFTER,
    SUBAGENTS,
    early_stop_runs,
    subagent_runs,
)

__all__ = [
    "BUDGET",
    "CHAPTERS_PER_SUBAGENT",
    "DEFAULT_CHAPTER_CHARS",
    "DEMOS",
    "EARLY_STOP_AFTER",
    "FORMAT",
    "HARD_LIMIT",
    "MODEL",
    "SUBAGENTS",
    "all_demo_runs",
    "demo_runs",
]

BUDGET = 400_000
"""The per-request budget (tokens) the seed incident ran with."""

HARD_LIMIT = 1_000_000
"""The model's hard limit (tokens): a larger request is rejected."""

DEFAULT_CHAPTER_CHARS = 100_000
"""Characters per chapter: about 44,600 o200k tokens of generated Russian."""

DEMOS: dict[str, Callable[..., tuple[Run, ...]]] = {
    "main": main_runs,
    "subagents": subagent_runs,
    "early-stop": early_stop_runs,
}
"""Demo builders by name; each takes keywords `chapter_chars` and `memo` and returns its
runs."""


def demo_runs(
    name: str, *, chapter_chars: int = DEFAULT_CHAPTER_CHARS, memo: CountMemo | None = None
) -> tuple[Run, ...]:
    """The runs of demo `name` (a key of DEMOS), chapters `chapter_chars` characters long;
    their o200k counts made into `memo` when given (for whoever counts them next).

    Raises KeyError naming the known demos for an unknown name.
    """
    try:
        factory = DEMOS[name]
    except KeyError:
        raise KeyError(f"unknown demo {name!r}; known: {', '.join(DEMOS)}") from None
    return factory(chapter_chars=chapter_chars, memo=memo)


def all_demo_runs(
    *, chapter_chars: int = DEFAULT_CHAPTER_CHARS, memo: CountMemo | None = None
) -> tuple[Run, ...]:
    """Every demo run: the main agent first, then the 8 subagents, then early-stop."""
    return tuple(
        run for name in DEMOS for run in demo_runs(name, chapter_chars=chapter_chars, memo=memo)
    )
