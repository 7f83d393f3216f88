"""While a large import writes, SQLite's checkpoints (copying the write-ahead log into
the database file) are made by a thread of their own, not by the import's commits."""

from __future__ import annotations

import sqlite3
import threading
import time
from types import SimpleNamespace

import pytest
from django.db import connection, transaction

from webapp.models import Upload
from webapp.runtime import checkpoints

pytestmark = pytest.mark.django_db(transaction=True)


def _setting() -> int:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        return int(cursor.fetchone()[0])


class _Watched:
    """The checkpointing thread's connection, noting how many frames each checkpoint
    copied."""

    def __init__(self, db: sqlite3.Connection, copied: list[int]) -> None:
        self.db, self.copied = db, copied

    def execute(self, sql: str) -> SimpleNamespace:
        rows = self.db.execute(sql).fetchall()
        if "wal_checkpoint" in sql:
            self.copied.append(rows[0][2])
        return SimpleNamespace(fetchall=lambda: rows)

    def close(self) -> None:
        self.db.close()


def test_commits_in_the_block_leave_checkpoints_to_the_thread_and_every_frame_is_copied(
    monkeypatch,
):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's write-ahead log: PostgreSQL has its own checkpointer")
    copied: list[int] = []
    real = checkpoints._checkpoints
    monkeypatch.setattr(
        checkpoints, "_checkpoints", lambda db, done: real(_Watched(db, copied), done)
    )
    before = _setting()
    assert before > 0
    with checkpoints.beside():
        assert _setting() == 0
        for n in range(40):
            with transaction.atomic():
                Upload.objects.bulk_create(
                    Upload(original_name=f"{n}-{i}" + "x" * 250, size=i, sha256="0" * 64)
                    for i in range(200)
                )
        # The connection checkpoints nothing now: the thread copies the log.
        deadline = time.monotonic() + 10
        while not any(copied) and time.monotonic() < deadline:
            time.sleep(checkpoints.EVERY / 2)
        assert any(copied)
    assert _setting() == before
    db = sqlite3.connect(str(connection.settings_dict["NAME"]))
    try:
        busy, frames, done = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        db.close()
    assert busy == 0 and frames == done
    assert Upload.objects.count() == 8_000


def test_an_error_in_the_block_still_ends_the_thread_and_restores_the_setting():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's write-ahead log: PostgreSQL has its own checkpointer")
    before = _setting()
    with pytest.raises(RuntimeError), checkpoints.beside():
        raise RuntimeError("the import failed")
    assert _setting() == before
    assert "checkpoints" not in {t.name for t in threading.enumerate()}
