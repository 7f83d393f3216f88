"""The embedded default's Celery broker: kombu's file-system transport, with each
message file written whole before a worker can see it.

kombu's own channel creates a message file and then writes it, while a worker polling
the folder moves and reads any file named like a message: a worker that polls between
the two reads an empty message, fails to decode it and stops taking tasks (seen when a
worker was killed and restarted while tasks were being sent). Here a message is
written under a name the poll ignores and renamed into place (a rename within a
folder is atomic), and a file that cannot be decoded, which then only a damaged disk
can leave, is set aside with a warning instead of stopping the worker.

webapp.celery registers this transport under the "filesystem" scheme.
"""

from __future__ import annotations

import logging
import os
import uuid
from time import monotonic_ns
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.transport.virtual import Empty
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

PARTIAL = ".part"
"""Suffix of a message file still being written (the poll matches `<queue>.msg`)."""


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        # Named by the time to the nanosecond, fixed width: taken in the order sent
        # (kombu's millisecond names put messages of one millisecond in random order).
        name = f"{monotonic_ns():020d}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + PARTIAL
        try:
            with open(partial, "wb") as out:
                out.write(dumps(payload).encode())
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: str) -> Any:  # type: ignore[override]
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            taken = os.path.join(self.processed_folder, name)
            try:
                # Whoever moves the file takes the message: another worker may have.
                os.replace(os.path.join(self.data_folder_in, name), taken)
                with open(taken, "rb") as found:
                    payload = found.read()
            except OSError:
                continue
            try:
                message = loads(payload.decode())
            except ValueError:  # also a UnicodeDecodeError
                logger.warning("broker: message file %s could not be decoded; set aside", taken)
                continue
            if not self.store_processed:
                os.remove(taken)
            return message
        raise Empty()


class Transport(filesystem.Transport):
    Channel = Channel
