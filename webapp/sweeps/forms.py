"""The form that starts a sweep. Its policies come from the registry."""

from __future__ import annotations

from typing import Any

from django import forms

from contextsim.analysis.sweep import SweepError, grid, parse_budgets, parse_settings
from contextsim.counting.estimators import DEFAULT
from contextsim.engine.simulate import MAX_TOKENS, REPLAY
from contextsim.registry import POLICIES, SYSTEM_POLICIES
from contextsim.truth.prices import default_limits
from webapp.models import Run

GENERAL = ("turns", "mythex")
"""The policies a sweep starts from when its runs' systems have none of their own."""
SHARES = (0.5, 0.65, 0.8, 1.0)
"""The budgets a sweep starts from, as shares of its runs' window."""


def suggested_grid(runs: list[Run]) -> dict[str, Any]:
    """What the form starts with for these runs: what was sent (as_logged) and the
    mechanisms their own systems have (e.g. Claude Code's auto-compaction for a Claude
    Code session; GENERAL when they have none), budgets at SHARES of the largest window
    among them and that window as the hard limit; {} for no run (the form's defaults)."""
    if not runs:
        return {}
    own = dict.fromkeys(p for r in runs for p in SYSTEM_POLICIES.get(r.format, ()))
    window = max(default_limits(r.model, r.context_window)[0] for r in runs)
    budgets = sorted({max(int(round(window * share, -3)), 1_000) for share in SHARES})
    return {
        "policies": [REPLAY, *(own or GENERAL)],
        "budgets": " ".join(str(b) for b in budgets),
        "hard_limit": window,
    }


class SweepForm(forms.Form):
    """A sweep: runs x policies x budgets, with one estimator and hard limit. Choices
    come from the policy registry and the estimators the person may use."""

    runs = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        label="Runs",
        error_messages={"required": "runs: choose at least one run"},
    )
    policies = forms.MultipleChoiceField(
        choices=[(name, name) for name in POLICIES],
        widget=forms.CheckboxSelectMultiple,
        initial=["turns", "mythex"],
        label="Policies",
        error_messages={"required": "policies: choose at least one policy"},
    )
    budgets = forms.CharField(
        initial="100000 200000 400000 800000",
        label="Budgets",
        help_text="tokens per request, separated by spaces or commas",
    )
    hard_limit = forms.IntegerField(
        min_value=1, max_value=MAX_TOKENS, initial=1_000_000, label="Hard limit"
    )
    estimator = forms.ChoiceField(label="Estimator", initial=DEFAULT)
    params = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "mythex.keep_results=6"}),
        label="Policy parameters",
        help_text="one policy.parameter=value per line; the others keep their defaults",
    )
    defer = forms.CharField(
        required=False,
        max_length=8_000,
        widget=forms.TextInput(attrs={"placeholder": "mcp__github__*, WebFetch"}),
        label="Also with these tools deferred",
        help_text="tool names or prefix* patterns: each policy (but as_logged) runs again "
        "with their definitions deferred (tool search); the runs must define them",
    )
    title = forms.CharField(required=False, max_length=300, label="Title")

    def __init__(
        self, *args: Any, runs: list[tuple[str, str]], estimators: list[str], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["runs"].choices = runs  # type: ignore[attr-defined]
        self.fields["estimator"].choices = [(e, e) for e in estimators]  # type: ignore[attr-defined]

    def clean_budgets(self) -> tuple[int, ...]:
        try:
            return parse_budgets(self.cleaned_data["budgets"])
        except SweepError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_params(self) -> dict[str, dict[str, str]]:
        try:
            return parse_settings(self.cleaned_data["params"].splitlines())
        except SweepError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if {"policies", "budgets", "params", "defer"} <= data.keys():
            unused = sorted(set(data["params"]) - set(data["policies"]))
            if unused:
                self.add_error("params", f"{', '.join(unused)} is not among the policies")
                return data
            try:
                data["configs"] = grid(
                    data["policies"], data["budgets"], data["params"], data["defer"]
                )
            except SweepError as exc:
                field = str(exc).partition(":")[0]
                self.add_error(field if field in self.fields else "params", str(exc))
        return data
