"""Fitting per-script rates from a run's measured usage: a `custom` estimator.

Each request with measured usage gives one equation: the measured context (tokens) is
the sum, over the messages it sent, of each script's characters times that script's
rate (tokens per character), plus the fixed per-message overhead, plus a constant: the
unlogged part (system prompt, tool definitions, injected context) the log does not
hold. What a request sent is what the log replays (as_logged): after a logged
compaction, the leading system messages and what follows the summary, not the whole
history. Rates and the constant are found by non-negative least squares on relative
errors, so short and long requests weigh alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.counting.redaction import counted_text
from contextsim.counting.scripts import SCRIPTS, count_by_script
from contextsim.model import Run, estimator_text, steps

MIN_REQUESTS = 3
RIDGE = 0.01
OVERHEAD_UNIT = 10_000
"""Tokens of one unit of the fitted constant (keeps its column on the rates' scale)."""


@dataclass(frozen=True, slots=True)
class Rates:
    """Tokens per character for each script present in the fit (others fall back to the
    seed rule's 0.25 for ASCII, 1 for CJK and 0.5 for the rest)."""

    per_char: dict[str, float]
    overhead: int = 0
    """Unlogged tokens per request fitted beside the rates (not counted by the
    estimator: reconciliation adds them, see contextsim.truth.reconcile)."""


FALLBACK = {
    s: 0.25 if s.startswith("ascii") else 1.0 if s in ("han", "kana", "hangul") else 0.5
    for s in SCRIPTS
}


class CustomEstimator:
    """An estimator from fitted per-script rates (see fit_rates)."""

    def __init__(self, name: str, rates: Rates, label: str = "") -> None:
        self.name = name
        self.label = label or f"custom rates ({name})"
        self.rates = {**FALLBACK, **rates.per_char}

    def count(self, text: str) -> int:
        if not text:
            return 0
        chars = count_by_script(text)
        return math.ceil(sum(self.rates[s] * n for s, n in chars.items() if n))


def request_features(run: Run) -> tuple[list[dict[str, int]], list[int], list[int]]:
    """(per-request script characters of what it sent, its message count, measured
    context) for every request with measured usage; what a request sent is what the
    log replays (its compactions applied)."""
    per_message = [count_by_script(counted_text(estimator_text(m))) for m in run.messages]
    running = dict.fromkeys(SCRIPTS, 0)
    sums: list[dict[str, int]] = [dict(running)]
    for chars in per_message:
        for s, n in chars.items():
            running[s] += n
        sums.append(dict(running))
    head = 0
    while head < len(run.messages) and run.messages[head].role == "system":
        head += 1
    boundaries = sorted(c.before_message for c in run.compactions if c.before_message > head)
    features, counts, measured = [], [], []
    for step in steps(run):
        if step.usage is None or step.usage.context <= 0:
            continue
        cut = max((b for b in boundaries if b < step.end), default=0)
        sent = sums[step.end]
        if cut:
            sent = {k: v - sums[cut][k] + sums[head][k] for k, v in sent.items()}
        features.append(sent)
        counts.append(step.end - (cut - head if cut else 0))
        measured.append(step.usage.context)
    return features, counts, measured


def fit_rates(run: Run) -> Rates:
    """Per-script rates that best explain the run's measured usage, on the requests of
    one stretch (between the log's compactions: each re-injects its own unlogged
    context, which one constant cannot stand for): the stretch with the most measured
    requests, the later of equals. Raises ValueError when fewer than MIN_REQUESTS
    requests were measured."""
    features, counts, measured = _one_stretch(run, *request_features(run))
    if len(measured) < MIN_REQUESTS:
        raise ValueError(
            f"the run has {len(measured)} request(s) with measured usage; at least "
            f"{MIN_REQUESTS} are needed to fit rates"
        )
    used = [s for s in SCRIPTS if any(f[s] for f in features)]
    # Relative errors: divide each equation by its measured size. The last column is
    # the constant (in units of OVERHEAD_UNIT tokens, so its scale is like the rates').
    rows = [
        [*(f[s] / y for s in used), OVERHEAD_UNIT / y]
        for f, y in zip(features, measured, strict=True)
    ]
    targets = [(y - MESSAGE_OVERHEAD * c) / y for y, c in zip(measured, counts, strict=True)]
    *weights, constant = _nnls(rows, targets, [*(FALLBACK[s] for s in used), 0.0], free=1)
    return Rates(dict(zip(used, weights, strict=True)), round(constant * OVERHEAD_UNIT))


def _one_stretch(
    run: Run, features: list[dict[str, int]], counts: list[int], measured: list[int]
) -> tuple[list[dict[str, int]], list[int], list[int]]:
    """The rows of request_features of the stretch fit_rates fits on."""
    if not run.compactions:
        return features, counts, measured
    boundaries = sorted(c.before_message for c in run.compactions)
    marks = [
        sum(b < step.end for b in boundaries)
        for step in steps(run)
        if step.usage is not None and step.usage.context > 0
    ]
    sizes = {m: marks.count(m) for m in set(marks)}
    chosen = max(sizes, key=lambda m: (sizes[m], m))
    keep = [i for i, m in enumerate(marks) if m == chosen]
    return [features[i] for i in keep], [counts[i] for i in keep], [measured[i] for i in keep]


def _nnls(
    rows: list[list[float]],
    targets: list[float],
    prior: list[float],
    rounds: int = 500,
    free: int = 0,
) -> list[float]:
    """Non-negative least squares by coordinate descent on the normal equations, pulled
    gently toward `prior`: a run's requests share most of their history, so without it
    scripts that always appear together can trade rates freely. The last `free` columns
    (the constant) are pulled only by a hundredth of that, relative to their own size."""
    n = len(rows[0])
    gram = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    rhs = [sum(r[i] * t for r, t in zip(rows, targets, strict=True)) for i in range(n)]
    pulled = n - free
    ridge = RIDGE * sum(gram[i][i] for i in range(pulled)) / max(pulled, 1)
    for i in range(n):
        own = ridge if i < pulled else RIDGE * gram[i][i] / 100
        gram[i][i] += own
        rhs[i] += own * prior[i]
    w = [0.0] * n
    for _ in range(rounds):
        for i in range(n):
            if gram[i][i] <= 0:
                continue
            residual = rhs[i] - sum(gram[i][j] * w[j] for j in range(n) if j != i)
            w[i] = max(0.0, residual / gram[i][i])
    return w


def mean_abs_error(estimates: list[int], measured: list[int]) -> float:
    """Mean of |estimate - measured| / measured (a share, 0.05 = 5%)."""
    pairs = [(e, m) for e, m in zip(estimates, measured, strict=True) if m]
    return sum(abs(e - m) / m for e, m in pairs) / len(pairs) if pairs else 0.0
