"""Reading hand-written examples with one importer, as the format tests do."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from contextsim.ingest.base import FormatError, Importer, ParsedFile, Source, read_source


class Examples:
    """`source`, `parse` and `error` of JSON-ready data (or raw bytes) for `importer`,
    under a file name typical of its format."""

    def __init__(self, importer: Importer, name: str, indent: int | None = None) -> None:
        self.importer, self.name, self.indent = importer, name, indent

    def source(self, data: Any, name: str | None = None) -> Source:
        raw = data if isinstance(data, bytes) else json.dumps(data, indent=self.indent).encode()
        return read_source(name or self.name, io.BytesIO(raw))

    def parse(self, data: Any, name: str | None = None) -> ParsedFile:
        return self.importer.parse(self.source(data, name))

    def error(self, data: Any) -> str:
        """The FormatError the example raises, as text."""
        with pytest.raises(FormatError) as err:
            self.parse(data)
        return str(err.value)
