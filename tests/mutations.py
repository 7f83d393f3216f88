"""Mutations of the real corpus logs for fuzz tests (tests/ingest/test_fuzz.py
through the core, tests/web/test_bad_input.py through the upload view and the API):
truncation, type flips, deep nesting, huge numbers, lone surrogates, bad UTF-8."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.conftest import corpus_root

ODD_VALUES = st.sampled_from(
    [None, -1, 2**70, 1.5e308, True, "", "\ud800", {"type": 5}, [[[]]], {"a": [1]}, "x" * 300]
)
MUTATION = {
    "choice": st.integers(0, 10**6),
    "line": st.integers(0, 10**6),
    "path": st.lists(st.integers(0, 50), max_size=6),
    "odd": ODD_VALUES,
    "cut": st.integers(0, 10**6),
    "kind": st.sampled_from(["mutate", "truncate", "deep", "bigint", "bad utf-8"]),
}
"""The arguments of a mutation, as Hypothesis strategies (`@given(**MUTATION)`)."""


def corpus_files(max_bytes: int | None = None) -> list[Path]:
    """The corpus's log files (none where the corpus is absent), at most `max_bytes`
    each when given."""
    root = corpus_root()
    if not root.is_dir():
        return []
    found = sorted(p for p in root.rglob("*") if p.suffix in (".jsonl", ".json", ".traj"))
    return [p for p in found if max_bytes is None or p.stat().st_size <= max_bytes]


def replace_at(value: Any, path: list[int], odd: Any) -> Any:
    """`value` with the element at `path` (indexes into lists and dicts) replaced."""
    if not path:
        return odd
    if isinstance(value, dict) and value:
        keys = list(value)
        key = keys[path[0] % len(keys)]
        return {**value, key: replace_at(value[key], path[1:], odd)}
    if isinstance(value, list) and value:
        i = path[0] % len(value)
        return [*value[:i], replace_at(value[i], path[1:], odd), *value[i + 1 :]]
    return odd


def mutated(file: Path, line: int, path: list[int], odd: Any, cut: int, kind: str) -> bytes:
    """The bytes of `file` with one line (a JSONL record, or the whole JSON document)
    changed by the mutation `kind`."""
    raw = file.read_bytes()
    lines = raw.splitlines() if file.suffix == ".jsonl" else [raw]
    i = line % len(lines)
    target = lines[i]
    at = cut % max(len(target), 1)
    if kind == "mutate":
        target = json.dumps(replace_at(json.loads(target), path, odd)).encode()
    elif kind == "truncate":
        target = target[:at]
    elif kind == "deep":
        target = b'{"type": "user", "message": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    elif kind == "bigint":
        target = target.replace(b"1", b"9" * 5000, 1)
    else:
        target = target[:at] + b"\xff\xfe" + target[at:]
    lines[i] = target
    return b"\n".join(lines)
