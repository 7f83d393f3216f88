"""A serving or working process's heap after start-up, and how often its garbage is
collected.

What a process makes while it starts (modules, settings, URL patterns, the tokenizers'
tables once loaded, Django's registries) lives as long as the process, yet every full
collection of Python's garbage collector walks all of it again: with the receivers'
and dashboards' caches full, a tenth to a quarter of a busy process's time. Once
started, it is moved out of the collector's way (gc.freeze): objects are still freed
when no longer referenced; only cycles among them would be kept, and start-up leaves
none that matter (it is collected first).

The web process (webapp.asgi, webapp.wsgi) only settles: it keeps CPython's collector
thresholds. Not settled, the OTLP receiver took 928-1,389 spans/s; settled, 2,613-2,681
(bench `otlp`, target 2,000). Raising its thresholds as well gave 3,106-3,131, but left
a page's context (kept alive by Django's RequestContext/ContextDict cycle) for rare
collections: a followed live run's dashboard then needed a template backend of its own
to let each page go; without either, a view at 20,000 messages spends 16 ms in the
collector on average (bench `live`), which no target needs.

Workers and `manage.py import_run` raise the thresholds (THRESHOLDS, `collect_seldom`):
an import holds a whole run's parsed messages while it writes them, and with the
defaults a 200 MB Claude Code session's import spent 3.0-3.9 s of its 30-38 s in the
collector, 0.3 s with the thresholds raised (bench `imports`, >= 25 MB/s). Garbage in
cycles then waits for up to 50,000 more allocations, a few megabytes at most.
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 20, 20)
"""gc.set_threshold's (young, middle, old) for a working process."""


def settle() -> None:
    """Collect what start-up left and freeze the rest out of later collections."""
    gc.collect()
    gc.freeze()


def collect_seldom() -> None:
    """Raise the collector's thresholds (THRESHOLDS): all a one-shot command needs."""
    gc.set_threshold(*THRESHOLDS)
