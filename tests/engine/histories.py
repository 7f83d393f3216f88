"""Random agent histories for property-based tests (Hypothesis strategies)."""

from __future__ import annotations

from hypothesis import strategies as st

from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart

SIZES = st.one_of(
    st.integers(1, 40),
    st.integers(40, 2_000),
    st.integers(2_000, 60_000),
    st.integers(60_000, 400_000),
)


@st.composite
def histories(draw: st.DrawFn, max_rounds: int = 30) -> Run:
    """A run: maybe a system prompt, a task, then tool rounds (parallel calls, results
    in one message or one per call), sometimes a new user turn, maybe a final answer."""
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message("system", (TextPart("s" * draw(st.integers(10, 4_000))),)))
    messages.append(Message("user", (TextPart("task " * draw(st.integers(1, 3_000))),)))
    subagent = draw(st.booleans())
    call = 0
    for _ in range(draw(st.integers(0, max_rounds))):
        if not subagent and draw(st.integers(0, 7)) == 0:
            messages.append(Message("assistant", (TextPart("ok"),)))
            messages.append(Message("user", (TextPart("next " * draw(st.integers(1, 500))),)))
        ids = [f"c{call + j}" for j in range(draw(st.integers(1, 3)))]
        call += len(ids)
        messages.append(Message("assistant", tuple(ToolCallPart(i, "read", "{}") for i in ids)))
        results = [ToolResultPart(i, "r" * draw(SIZES)) for i in ids]
        if draw(st.booleans()):
            messages.append(Message("user", tuple(results)))
        else:
            messages.extend(Message("tool", (r,)) for r in results)
    if draw(st.booleans()):
        messages.append(Message("assistant", (TextPart("done"),)))
    return Run("h", tuple(messages), subagent=subagent)
