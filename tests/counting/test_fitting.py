"""Fitting per-script rates on measured usage (a `custom` estimator)."""

from __future__ import annotations

import pytest

from contextsim.counting.estimators import count_message
from contextsim.counting.fitting import CustomEstimator, fit_rates, mean_abs_error, request_features
from contextsim.model import Message, Run, TextPart, Usage, steps
from contextsim.systems.seed.demo import demo_runs


def errors(run: Run, estimator) -> float:
    totals = [0]
    for m in run.messages:
        totals.append(totals[-1] + count_message(m, estimator))
    _, _, measured = request_features(run)
    return mean_abs_error([totals[s.end] for s in steps(run) if s.usage], measured)


def test_fitted_rates_explain_the_measured_usage_better_than_the_seed_rule():
    from contextsim.counting.estimators import ESTIMATORS

    (run,) = demo_runs("early-stop", chapter_chars=20_000)
    rates = fit_rates(run)
    custom = CustomEstimator("custom-test-early-stop", rates)
    assert 0.3 < rates.per_char["cyrillic"] < 0.7  # about 2.2 characters per token
    assert (
        errors(run, custom) < errors(run, ESTIMATORS["script"]) < errors(run, ESTIMATORS["chars4"])
    )


def test_too_few_measured_requests_is_a_clear_error():
    run = Run(
        "r",
        (Message("user", (TextPart("hi"),)), Message("assistant", (TextPart("yo"),), Usage(10))),
    )
    with pytest.raises(ValueError, match="1 request\\(s\\) with measured usage; at least 3"):
        fit_rates(run)


def test_unfitted_scripts_fall_back_to_the_seed_rule():
    custom = CustomEstimator(
        "custom-test-fallback", fit_rates(demo_runs("early-stop", chapter_chars=5_000)[0])
    )
    assert custom.count("中文字") == 3


def test_rates_are_fitted_on_one_stretch_never_across_a_compaction(corpus):
    import statistics

    from contextsim.counting.fitting import _one_stretch
    from contextsim.ingest.detect import parse_path
    from contextsim.model import steps

    path = corpus / "claude_code" / "codemie_session-624a4a58.jsonl"
    (run,) = [r for r in parse_path(path).runs if not r.subagent]
    features, counts, measured = request_features(run)
    kept = _one_stretch(run, features, counts, measured)[2]
    (boundary,) = [c.before_message for c in run.compactions]
    before = [s for s in steps(run) if s.usage is not None and s.end <= boundary]
    assert len(kept) == max(len(before), len(measured) - len(before))
    rates = fit_rates(run)
    custom = CustomEstimator("custom-stretch", rates)
    sel = [i for i, m in enumerate(measured) if m in set(kept)]
    errors = [
        abs(
            sum(custom.rates[s] * n for s, n in features[i].items())
            + 4 * counts[i]
            + rates.overhead
            - measured[i]
        )
        / measured[i]
        for i in sel
    ]
    assert statistics.median(errors) <= 0.05
