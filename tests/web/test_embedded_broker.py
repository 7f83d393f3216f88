"""The embedded default's broker (webapp.runtime.embedded_broker): a message is taken whole or
not at all, and a damaged one does not stop the worker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kombu import Connection

import webapp.celery  # noqa: F401  (registers the transport under "filesystem")
from webapp.runtime.embedded_broker import PARTIAL, Transport


@pytest.fixture(scope="module")
def control(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The exchanges' bindings: kombu remembers per process which it declared, so they
    are kept in one folder for the module."""
    return tmp_path_factory.mktemp("control")


@pytest.fixture
def connection(tmp_path: Path, control: Path):
    folders = {name: tmp_path / name for name in ("queue", "processed")}
    for folder in folders.values():
        folder.mkdir()
    folders["control"] = control
    options = {
        "data_folder_in": str(folders["queue"]),
        "data_folder_out": str(folders["queue"]),
        "processed_folder": str(folders["processed"]),
        "control_folder": str(folders["control"]),
        "store_processed": False,
    }
    with Connection("filesystem://", transport_options=options) as conn:
        yield conn, folders


def test_the_filesystem_scheme_uses_the_whole_message_transport(connection):
    conn, _ = connection
    assert isinstance(conn.transport, Transport)


def test_messages_go_through_in_order_and_leave_no_file(connection):
    conn, folders = connection
    queue = conn.SimpleQueue("jobs")
    for n in range(3):
        queue.put({"job": n})
    got = []
    for _ in range(3):
        message = queue.get(timeout=2)
        got.append(message.payload["job"])
        message.ack()
    assert got == [0, 1, 2]
    assert os.listdir(folders["queue"]) == [] and os.listdir(folders["processed"]) == []
    queue.close()


def test_a_message_still_being_written_is_not_taken(connection):
    conn, folders = connection
    queue = conn.SimpleQueue("jobs")
    # What a sender killed mid-write leaves: never renamed into place.
    (folders["queue"] / f"1_x.jobs.msg{PARTIAL}").write_bytes(b'{"body": ')
    with pytest.raises(queue.Empty):
        queue.get(timeout=0.3)
    queue.put({"job": "next"})
    message = queue.get(timeout=2)
    assert message.payload == {"job": "next"}
    message.ack()
    queue.close()


def test_a_damaged_message_is_set_aside_and_the_next_one_taken(connection, caplog):
    conn, folders = connection
    queue = conn.SimpleQueue("jobs")
    (folders["queue"] / "00000000000000000000_damaged.jobs.msg").write_bytes(b"")
    queue.put({"job": "after"})
    message = queue.get(timeout=2)
    assert message.payload == {"job": "after"}
    message.ack()
    assert os.listdir(folders["processed"]) == ["00000000000000000000_damaged.jobs.msg"]
    assert "could not be decoded" in caplog.text
    queue.close()
