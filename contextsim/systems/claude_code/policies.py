"""Claude Code's context policies: auto-compact (a summary once the window is nearly
full, stateful) and time-based microcompaction (old results of bulky tools cleared
after an idle gap).
"""

from __future__ import annotations

from dataclasses import dataclass

from contextsim.counting.estimators import MESSAGE_OVERHEAD
from contextsim.engine.condensing import RESULT, SUMMARY_NOTE, run_window
from contextsim.engine.cuts import leading_system
from contextsim.engine.policy import Context, Plan, plain_accounts


@dataclass(frozen=True, slots=True)
class ClaudeCodeParams:
    window: int | None = None
    """The model's window (None: the model's from genai-prices, else 200,000)."""
    max_output: int = 32_000
    """Output tokens reserved against the window: from Claude Code 2.1 at most 20,000
    of them (`capped_output`), before that all of them."""
    buffer: int = 13_000
    """Tokens kept free below the effective window: the threshold is window - reserved
    output - buffer: 167,000 on a 200k model from 2.1, 155,000 before."""
    capped_output: bool | None = None
    """Whether the reserve is capped at 20,000 (None: as the log's version does: from
    2.1 on, and when the log names no version)."""
    summary_tokens: int = 3_000
    """Tokens of the summary (an assumption)."""


class ClaudeCodePlanner:
    """Before a request at or over the threshold, everything but the system prompt and
    the newest exchange (the user's message, or the last call and its results) becomes
    one summary. O(1) per request."""

    def __init__(self, ctx: Context, params: ClaudeCodeParams) -> None:
        sk = self.sk = ctx.skeleton
        self.statics, self.acct = plain_accounts(sk)
        self.head = leading_system(sk)
        window = params.window or run_window(sk, 200_000)
        capped = params.capped_output
        if capped is None:
            capped = not _before(sk.harness_version, (2, 1))
        reserve = min(params.max_output, 20_000) if capped else params.max_output
        self.threshold = window - reserve - params.buffer
        self.note = MESSAGE_OVERHEAD + params.summary_tokens
        self.provider = ctx.provider
        self.boundary = 0

    def _plan(self, end: int) -> Plan:
        if not self.boundary:
            return Plan(end)
        return Plan(end, self.head, self.boundary, "s", self.note, stage="summarize")

    def plan(self, end: int) -> Plan:
        plan = self._plan(end)
        if self.provider(self.acct.sent(plan)) >= self.threshold and end > 0:
            last = end - 1
            call = self.sk.answers[last] if self.sk.kinds[last] == RESULT else -1
            cut = call if call >= 0 else last
            if cut > max(self.boundary, self.head):
                self.boundary = cut
                plan = self._plan(end)
        return plan


def _before(version: str, than: tuple[int, int]) -> bool:
    """Whether a version such as "2.0.76" is older than `than` (False when unreadable)."""
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) < than


class ClaudeCodePolicy:
    """Claude Code's auto-compact: at window - 33,000 tokens (by default), the
    conversation is replaced by a summary, sent as a user message after the system
    prompt, and goes on from there.

    Source: Claude Code is closed source; the threshold (effective window = window -
    min(max output, 20,000), less a 13,000-token buffer) is from public analyses
    (anthropics/claude-code issue 31806). Versions before 2.1 reserved the whole max
    output (32,000): real 2.0.x sessions compact at about 155k, 2.1.x at about 167k.
    It decides on the provider's count (the reconciled size). Not modelled: the files
    it reads back in after compacting (up to 50,000 tokens), CLAUDE.md, microcompaction
    of old tool results (claude_code_microcompact)."""

    name = "claude_code_auto_compact"
    label = "claude_code_auto_compact: summarize at window - 33k (Claude Code)"
    source = "Claude Code auto-compact (public analyses)"
    Params = ClaudeCodeParams

    def setup(self, ctx: Context, params: ClaudeCodeParams) -> ClaudeCodePlanner:
        return ClaudeCodePlanner(ctx, params)

    def replacements(self, params: ClaudeCodeParams) -> dict[str, str]:
        return {"s": SUMMARY_NOTE}
