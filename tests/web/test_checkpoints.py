"""While a large import writes, SQLite's checkpoints (copying the write-ahead log into
the database file) are made by a thread of their own, not by the import's commits."""

from __future__ import annotations

import sqlite3
import threading
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
    with checkpoints.beside():
        assert _setting() == 0
        for n in range(40):
            with transaction.atomic():
                Upload.objects.bulk_create(
                    Upload(original_name=f"{n}-{i}" + "x" * 250, size=i, sha256="0" * 64)
                    for i in range(200)
                )
    assert _setting() == before
    name = str(connection.settings_dict["NAME"])
    assert Path(name + "-wal").stat().st_size > 0  # the log was written, then copied
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
