"""Estimators compared by writing script, against a real tokenizer.

For one text: per script, its characters, the reference tokenizer's tokens attributed
to it (they add up exactly to the tokenizer's total), and every registered estimator's
tokens for that script's text alone. Units: characters and tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextsim.counting.attribution import attribute
from contextsim.counting.estimators import ESTIMATORS, Tiktoken
from contextsim.counting.scripts import SCRIPTS, segments
from contextsim.ingest.base import FormatError
from contextsim.ingest.detect import parse_path
from contextsim.model import Run, estimator_text

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
    totals = {name: est.count(text) for name, est in ESTIMATORS.items()}
    scripts: dict[str, dict[str, int]] = {}
    for script, part in script_texts(text).items():
        row = {"chars": len(part), "reference": by_script.get(script, 0)}
        without: str | None = None
        for name, est in ESTIMATORS.items():
            split = attributed[name]
            if split is not None:
                row[name] = split.get(script, 0)
            elif getattr(est, "per_character", False):
                row[name] = est.count(part)
            else:
                # A model of words and their neighbours cannot count a script torn out of
                # its text: take what the script adds to the whole text instead (scaled
                # below so the scripts add up to the estimator's total).
                without = without if without is not None else _without(text, script)
                row[name] = max(totals[name] - est.count(without), 0)
        scripts[script] = row
    for name, est in ESTIMATORS.items():
        if attributed[name] is None and not getattr(est, "per_character", False):
            _scale_to(scripts, name, totals[name])
    total = {"chars": len(text), "reference": sum(by_script.values()), **totals}
    return {"scripts": scripts, "total": total}


def _scale_to(scripts: dict[str, dict[str, int]], name: str, total: int) -> None:
    """Scale the scripts' values of `name` to integers adding up to `total` (largest
    remainders first)."""
    marginal = {s: row[name] for s, row in scripts.items()}
    whole = sum(marginal.values())
    if whole == 0:
        return
    exact = {s: total * v / whole for s, v in marginal.items()}
    floors = {s: int(v) for s, v in exact.items()}
    left = total - sum(floors.values())
    for s in sorted(exact, key=lambda s: exact[s] - floors[s], reverse=True)[:left]:
        floors[s] += 1
    for s, value in floors.items():
        scripts[s][name] = value


def _without(text: str, script: str) -> str:
    """`text` with the characters of `script` blanked out (spaces and punctuation are
    removed instead, since blanking them changes nothing)."""
    spans = [(a, b) for s, a, b in segments(text) if s == script]
    filler = "" if script == "ascii_other" else " "
    out, last = [], 0
    for a, b in spans:
        out.append(text[last:a])
        out.append(filler * (b - a) if filler else "")
        last = b
    out.append(text[last:])
    return "".join(out)


def run_text(run: Run) -> str:
    """What an estimator reads in a run: every message's text, arguments and results."""
    return "\n".join(estimator_text(m) for m in run.messages)


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
