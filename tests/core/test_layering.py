"""The core stays framework-free: it imports nothing from Django, Celery, plotly or
the web application (checked on the source, so no import can sneak in lazily)."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "contextsim"
FORBIDDEN = {
    "django",
    "celery",
    "kombu",
    "plotly",
    "webapp",
    "langchain",
    "langchain_core",
    "opentelemetry",
}


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_core_modules_import_no_framework():
    offenders = {
        str(p.relative_to(CORE)): sorted(imported_roots(p) & FORBIDDEN)
        for p in CORE.rglob("*.py")
        if imported_roots(p) & FORBIDDEN
    }
    assert list(CORE.rglob("*.py"))
    assert offenders == {}


def test_core_uses_no_wall_clock_or_global_random():
    for path in CORE.rglob("*.py"):
        source = path.read_text()
        for banned in ("time.time(", "datetime.now(", "random.random(", "random.seed("):
            assert banned not in source, f"{path}: {banned}"
