"""A serving process's heap after start-up.

What a process makes while it starts (modules, settings, URL patterns, the tokenizers'
tables once loaded, Django's registries) lives as long as the process, yet every full
collection of Python's garbage collector walks all of it again: with the receivers'
and dashboards' caches full, a tenth to a quarter of a busy process's time. Once
started, it is moved out of the collector's way (gc.freeze): objects are still freed
when no longer referenced; only cycles among them would be kept, and start-up leaves
none that matter (it is collected first).
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Collect what start-up left, then freeze the rest out of later collections."""
    gc.collect()
    gc.freeze()
