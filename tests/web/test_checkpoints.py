"""While a large import writes, SQLite's checkpoints (copying the write-ahead log into
the database file) are made by a thread of their own, not by the import's commits."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from django.db import connection, transaction

from webapp import checkpoints
from webapp.models import Upload

pytestmark = pytest.mark.django_db(transaction=True)


def _setting() -> int:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        return int(cursor.fetchone()[0])


def test_commits_in_the_block_leave_checkpoints_to_the_thread_and_every_frame_is_copied():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's write-ahead log: PostgreSQL has its own checkpointer")
    before = _setting()
    assert before > 0
    name = str(connection.settings_dict["NAME"])
    with checkpoints.beside():
        assert _setting() == 0
        size = Path(name).stat().st_size
        for n in range(40):
            with transaction.atomic():
                Upload.objects.bulk_create(
                    Upload(original_name=f"{n}-{i}" + "x" * 250, size=i, sha256="0" * 64)
                    for i in range(200)
                )
        # The connection checkpoints nothing now: the database file grows only as
        # the thread copies the log into it (2 MB of rows written).
        deadline = time.monotonic() + 10
        while Path(name).stat().st_size < size + 1_000_000 and time.monotonic() < deadline:
            time.sleep(checkpoints.EVERY / 2)
        assert Path(name).stat().st_size >= size + 1_000_000
    assert _setting() == before
    db = sqlite3.connect(name)
    try:
        busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        db.close()
    assert busy == 0 and frames == copied
    assert Upload.objects.count() == 8_000


def test_an_error_in_the_block_still_ends_the_thread_and_restores_the_setting():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's write-ahead log: PostgreSQL has its own checkpointer")
    before = _setting()
    with pytest.raises(RuntimeError), checkpoints.beside():
        raise RuntimeError("the import failed")
    assert _setting() == before
    assert "checkpoints" not in {t.name for t in threading.enumerate()}
