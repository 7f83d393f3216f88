"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def corpus_root() -> Path:
    """Where the real logs written by other projects live (never copied into the repo)."""
    return Path(os.environ.get("CONTEXTSIM_CORPUS", ROOT.parent / "shared" / "corpus"))


@pytest.fixture
def corpus() -> Path:
    """The corpus folder; the test is skipped, with the reason, where it is absent."""
    root = corpus_root()
    if not root.is_dir():
        pytest.skip(f"real-log corpus not found at {root} (set CONTEXTSIM_CORPUS)")
    return root
