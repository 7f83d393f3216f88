"""What every policy that condenses the history shares: the note a summary is shown
as, where a kept part may start, and the run's window.

Such a policy (OpenHands' condensers, Codex's and Claude Code's auto-compaction, Letta's
summarizers, ADK's and Inspect AI's compaction) keeps a head, drops or summarizes
messages [head, boundary), and sends messages [boundary, end); the boundary only moves
forward, when the limit is crossed again. Units: tokens under the run's estimator
unless said; indexes are messages.
"""

from __future__ import annotations

from contextsim.counting.memory import per_skeleton
from contextsim.counting.skeleton import KIND_INDEX, Skeleton
from contextsim.model import Usage
from contextsim.truth.prices import model_facts

RESULT = KIND_INDEX["tool_result"]
SUMMARY_NOTE = "[One message summarizing the earlier conversation.]"


def past_results(sk: Skeleton, i: int, end: int) -> int:
    """The first message at or after i that is not a tool result (at most `end`): a
    kept part starting there holds no result whose call was dropped."""
    while i < end and sk.kinds[i] == RESULT:
        i += 1
    return i


def check_window(max_size: int, keep_first: int) -> None:
    """Raise ValueError unless the halved view has room for the head and a tail."""
    if max_size < 4 or not 0 <= keep_first < max_size // 2 - 1:
        raise ValueError("max_size must be at least 4 and keep_first below max_size / 2 - 1")


def run_window(sk: Skeleton, fallback: int) -> int:
    """The run's context window in tokens: what the log states (Codex's
    model_context_window), else the model's from genai-prices, else `fallback`."""
    if sk.context_window:
        return sk.context_window
    facts = model_facts(sk.model)
    return facts.context_window if facts and facts.context_window else fallback


def logged_usage(sk: Skeleton, end: int) -> Usage | None:
    """The measured usage of the log's response at message `end`, when the request
    there is the one a policy that has not acted yet would send: a request before the
    log's first compaction whose usage was measured. None otherwise. A harness decides
    on the measured usage of what it sent, so a policy modelling one decides on it too
    for as long as it sends the same."""
    return logged_usages(sk).get(end)


def logged_usages(sk: Skeleton) -> dict[int, Usage]:
    """logged_usage of every response that has one, by message index (kept per
    skeleton)."""
    return per_skeleton(sk, "logged_usage", lambda: _logged(sk))


def _logged(sk: Skeleton) -> dict[int, Usage]:
    first = min((b for b in sk.compactions if b > 0), default=sk.size + 1)
    return {
        r: u
        for r, u in zip(sk.responses, sk.usage, strict=True)
        if r is not None and u is not None and u.context > 0 and r < first
    }
