"""What a Codex user can tune: `model_auto_compact_token_limit` (config.toml), from
40% to 95% of the window."""

from __future__ import annotations

from contextsim.analysis.tuning import Dimension, Mechanism, share_steps


def _auto_compact(window: int) -> tuple[Dimension, ...]:
    return (Dimension("compact_limit", share_steps(window, 0.40, 0.95, 0.001)),)


MECHANISMS = (
    Mechanism(
        "codex-auto-compact",
        "Codex's model_auto_compact_token_limit",
        "codex_auto_compact",
        _auto_compact,
    ),
)
