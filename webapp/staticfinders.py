"""Serve plotly.js straight from the installed plotly package (no JS build, no copy in
the repository): only the one file the pages load is exposed, as plotly/plotly.min.js."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

FOLDER = Path(plotly.__file__).resolve().parent / "package_data"
NAME = "plotly.min.js"
URL_PATH = f"plotly/{NAME}"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=str(FOLDER))
        self.storage.prefix = "plotly"  # type: ignore[attr-defined]

    def check(self, **kwargs: Any) -> list[Any]:
        return []

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> Any:
        if path != URL_PATH:
            return [] if find_all else None
        found = str(FOLDER / NAME)
        return [found] if find_all else found

    def list(self, ignore_patterns: Any) -> Any:
        yield NAME, self.storage
