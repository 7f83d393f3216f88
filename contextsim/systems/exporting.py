"""What every exporter shares: its input (ExportContext) and output (Snippet)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Language = Literal["json", "python", "toml", "yaml", "sh"]


@dataclass(frozen=True, slots=True)
class ExportContext:
    """What an exporter may use: the policy's `params` (its Params dataclass) and the
    run's `budget` and `hard_limit` (tokens) and `model` ('' when unknown)."""

    params: Any
    budget: int
    hard_limit: int
    model: str = ""


@dataclass(frozen=True, slots=True)
class Snippet:
    """One configuration to paste: for `target` (a short name, e.g. "anthropic-api"),
    titled `label`, in `language`; `notes` say what the real system cannot express or
    does differently from the simulation (shown next to it)."""

    target: str
    label: str
    language: Language
    text: str
    notes: tuple[str, ...] = ()


Exporter = Callable[[ExportContext], tuple[Snippet, ...]]
