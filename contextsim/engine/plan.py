"""The Plan of one request and the per-message Statics a policy fixes in advance.

Plans are immutable named tuples rather than frozen dataclasses: simulation makes one
per request per configuration, and a tuple is several times cheaper to create."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class Plan(NamedTuple):
    """Request `end` (its history is messages [0, end)), as sent.

    Messages [0, gap_start) and [gap_end, end) are sent; [gap_start, gap_end) are left
    out, marked `gap_kind` ("t" truncated or "s" summarized), and replaced by an inserted
    note or summary of `gap_note` tokens (0: nothing inserted). A clearable message with
    index < clear_before is sent cleared; an offloaded one as its stub. `extra` counts
    tokens of other inserted content. `stage` names the last stage the policy needed.
    A message with index < thinking_before whose thinking is clearable (Statics.thinking)
    is sent without its thinking (Anthropic's clear_thinking edit); such a message, like
    one cleared, is disposition "c".
    """

    end: int
    gap_start: int = 0
    gap_end: int = 0
    gap_kind: str = "t"
    gap_note: int = 0
    clear_before: int = 0
    extra: int = 0
    stage: str = "none"
    thinking_before: int = 0


@dataclass(slots=True)
class Statics:
    """Per-configuration, per-message facts a policy fixes before the first step.

    `cleared_tokens[i]` is what message i costs when cleared (its notes); a message is
    clearable only when that saves tokens. `offload_tokens[i]` is its stub's size.
    `thinking[i]` is the thinking tokens message i loses when its thinking is cleared
    (Plan.thinking_before); empty when the policy never clears thinking.
    """

    clearable: list[bool]
    cleared_tokens: list[int]
    offloaded: list[bool] = field(default_factory=list)
    offload_tokens: list[int] = field(default_factory=list)
    thinking: list[int] = field(default_factory=list)
