"""SQLite's WAL checkpoints made on a thread beside a large import.

In WAL mode a commit appends the transaction's pages to the write-ahead log, and the
connection that commits past 1,000 pages of log copies them into the database file
(a checkpoint) before its commit returns. An import's batches are megabytes each, so
each of its commits waited for that copy: a fifth of the time until its runs could be
browsed. The copy is one long call into SQLite, which lets go of the GIL, so here it
runs on a thread of its own with a connection of its own, overlapping the parsing and
counting of the next batch; the importing connection stops checkpointing meanwhile.
Passive checkpoints never wait for a reader or a writer. On PostgreSQL nothing is done.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from django.db import connection

EVERY = 0.2
"""Seconds between checkpoints while the import writes."""


@contextmanager
def beside() -> Iterator[None]:
    """Checkpoint the SQLite database on another thread while the block runs (see the
    module's docstring); the connection's own checkpoints are back when it ends."""
    name = str(connection.settings_dict["NAME"])
    if connection.vendor != "sqlite" or ":memory:" in name or "mode=memory" in name:
        yield
        return
    try:
        db = sqlite3.connect(name, isolation_level=None, check_same_thread=False)
    except sqlite3.Error:  # the connection checkpoints as before
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        before = int(cursor.fetchone()[0])
        cursor.execute("PRAGMA wal_autocheckpoint=0")
    done = threading.Event()
    thread = threading.Thread(target=_checkpoints, args=(db, done), name="checkpoints", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        if connection.connection is not None:  # reopened connections start as before
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA wal_autocheckpoint={before}")


def _checkpoints(db: sqlite3.Connection, done: threading.Event) -> None:
    """Passive checkpoints through `db` every EVERY seconds until `done`, and one
    after; then `db` is closed."""
    try:
        while True:
            finished = done.wait(EVERY)
            # Busy or failed: the next one copies what this one did not.
            with suppress(sqlite3.Error):
                db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            if finished:
                return
    finally:
        db.close()
