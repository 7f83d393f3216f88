"""A serving or working process's heap after start-up, and how often its garbage is
collected.

What a process makes while it starts (modules, settings, URL patterns, the tokenizers'
tables once loaded, Django's registries) lives as long as the process, yet every full
collection of Python's garbage collector walks all of it again: with the receivers'
and dashboards' caches full, a tenth to a quarter of a busy process's time. Once
started, it is moved out of the collector's way (gc.freeze): objects are still freed
when no longer referenced; only cycles among them would be kept, and start-up leaves
none that matter (it is collected first).

The collector's thresholds are raised too (THRESHOLDS). With CPython's defaults
(700, 10, 10) a receiver following 2,000 conversations (~95 tracked objects each) ran
a young collection every few hundred spans and a full one every thousand: 1.1-1.5 s of
a 6 s batch of 10,000 spans (bench `otlp`). Raised, the same batch collects a dozen
times in 0.2-0.4 s; garbage in cycles waits for up to 50,000 more allocations, a few
megabytes at most, before it is freed.

Celery workers settle too, before their pool starts; `manage.py import_run`, a one-shot
command, only raises the thresholds. An import holds a whole run's parsed messages
while it writes them: with the defaults a 200 MB Claude Code session's import spent
3.0-3.9 s of its 30-38 s in the collector, 0.3 s with the thresholds raised.
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 20, 20)
"""gc.set_threshold's (young, middle, old) for a serving or working process."""


def settle() -> None:
    """Collect what start-up left, freeze the rest out of later collections and raise
    the collector's thresholds (collect_seldom)."""
    gc.collect()
    gc.freeze()
    collect_seldom()


def collect_seldom() -> None:
    """Raise the collector's thresholds (THRESHOLDS): all a one-shot command needs."""
    gc.set_threshold(*THRESHOLDS)
