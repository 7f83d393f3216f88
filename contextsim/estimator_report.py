"""Estimators compared by writing script, against a real tokenizer.

For one text: per script, its characters, the reference tokenizer's tokens attributed
to it (they add up exactly to the tokenizer's total), and every registered estimator's
tokens for that script's text alone. Units: characters and tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextsim.attribution import attribute
from contextsim.estimators import ESTIMATORS, Tiktoken
from contextsim.formats import FormatError, parse_path
from contextsim.model import Run
from contextsim.scripts import SCRIPTS, segments

REFERENCES = {"o200k": "o200k_base", "cl100k": "cl100k_base"}


def script_texts(text: str) -> dict[str, str]:
    """The text of each script present, its runs joined in order."""
    pieces: dict[str, list[str]] = {}
    for script, start, end in segments(text):
        pieces.setdefault(script, []).append(text[start:end])
    return {s: "".join(pieces[s]) for s in SCRIPTS if s in pieces}


def compare_text(text: str, reference: str = "o200k") -> dict[str, Any]:
    """Per script and in total: chars, reference tokens and each estimator's tokens."""
    if reference not in REFERENCES:
        raise ValueError(f"unknown reference {reference!r}; expected o200k or cl100k")
    by_script = attribute(text, REFERENCES[reference])
    # A real tokenizer's tokens are split by the characters they cover, like the
    # reference's; a rule counts each script's own text.
    attributed = {
        name: attribute(text, est.encoding_name) if isinstance(est, Tiktoken) else None
        for name, est in ESTIMATORS.items()
    }
    scripts: dict[str, dict[str, int]] = {}
    for script, part in script_texts(text).items():
        row = {"chars": len(part), "reference": by_script.get(script, 0)}
        for name, est in ESTIMATORS.items():
            split = attributed[name]
            row[name] = split.get(script, 0) if split is not None else est.count(part)
        scripts[script] = row
    total = {"chars": len(text), "reference": sum(by_script.values())}
    total.update({name: est.count(text) for name, est in ESTIMATORS.items()})
    return {"scripts": scripts, "total": total}


def run_text(run: Run) -> str:
    """What an estimator reads in a run: every message's text, arguments and results."""
    out: list[str] = []
    for message in run.messages:
        for part in message.parts:
            if part.type in ("text", "thinking", "tool_result"):
                out.append(part.text)
            elif part.type == "tool_call":
                out.append(part.name + part.arguments)
    return "\n".join(out)


def file_text(path: str) -> str:
    """A run log's text when the file is a log in a known format, else the file read as
    UTF-8 text. Raises FormatError for a file that is neither."""
    try:
        parsed = parse_path(path)
    except FormatError as exc:
        if "could not recognise" not in str(exc) and "invalid JSON" not in str(exc):
            raise
    else:
        return "\n".join(run_text(r) for r in parsed.runs)
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(path, "", f"not valid UTF-8 text (byte offset {exc.start})") from None
    except OSError as exc:
        raise FormatError(path, "", f"cannot read the file ({exc.strerror})") from None


def signed_error(estimate: int, reference: int) -> float | None:
    """(estimate - reference) / reference, or None when the reference is 0."""
    return None if reference == 0 else (estimate - reference) / reference
