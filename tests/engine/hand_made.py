"""Small hand-made runs for the policies' rule-by-rule tests (chars4: a result of 4,000
characters is 1,004 tokens with the message overhead), and `sim`, which simulates a
policy over one with generous limits."""

from __future__ import annotations

from typing import Any

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.engine.simulate import Simulation, simulate
from contextsim.model import Message, Run, TextPart, ToolCallPart, ToolResultPart
from contextsim.registry import POLICIES

EST = ESTIMATORS["chars4"]


def user(text: str = "do it") -> Message:
    return Message("user", (TextPart(text),))


def call(*ids: str, tool: str = "read", arguments: str = '{"path": "a.py"}') -> Message:
    return Message("assistant", tuple(ToolCallPart(i, tool, arguments) for i in ids))


def result(call_id: str, chars: int = 4_000) -> Message:
    return Message("tool", (ToolResultPart(call_id, "r" * chars),))


def rounds(count: int, chars: int = 4_000, tool: str = "read") -> list[Message]:
    """`count` rounds of one call and one result of `chars` characters (~chars/4 tokens)."""
    out: list[Message] = []
    for n in range(count):
        out += [call(f"c{n}", tool=tool), result(f"c{n}", chars)]
    return out


def run_of(*messages: Message) -> Run:
    return Run("r", (user(), *messages, Message("assistant", (TextPart("done"),))))


def sim(policy: str, run: Run, **params: Any) -> Simulation:
    chosen = POLICIES[policy].Params(**params)
    sk = build(run, EST)
    return simulate(sk, POLICIES[policy], chosen, budget=10**7, hard_limit=10**8, count=EST.count)


def results_letters(s: Simulation, step: int) -> str:
    """The dispositions of the tool results of request `step`, oldest first."""
    letters = s.dispositions(step)
    return "".join(letters[i] for i in range(len(letters)) if s.skeleton.result_count[i])


def task(*messages: Message) -> Run:
    return Run("r", (Message("system", (TextPart("be brief"),)), user(), *messages))


OK = Message("assistant", (TextPart("ok"),))


SYSTEM = Message("system", (TextPart("be brief"),))


def invocations(count: int, per: int, chars: int = 4_000) -> Run:
    """The system message, then `count` invocations: a user message, `per` rounds of
    one call and one result, and a plain answer (2 * per + 2 messages each)."""
    messages = [SYSTEM]
    for _ in range(count):
        messages += [user(), *rounds(per, chars), OK]
    return Run("r", (*messages, user("last")))


def first_step_at(s: Simulation, end: int) -> int:
    return next(r.step for r in s.records if r.end >= end)
