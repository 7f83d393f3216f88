"""The core stays framework-free: it imports nothing from Django, Celery, plotly or
the web application (checked on the source, so no import can sneak in lazily)."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "contextsim"
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


ROOT = CORE.parent
PACKAGES = ("contextsim", "webapp")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p): p
        for package in PACKAGES
        for p in (ROOT / package).rglob("*.py")
        if "migrations" not in p.parts
    }


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules `name` imports anywhere in its source (lazy imports inside
    functions included: they close a circle just the same)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    found.add(full)
                elif base in known:
                    found.add(base)
    return found - {name}


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_no_two_modules_import_each_other_directly_or_through_others():
    graph = _graph()
    assert "webapp.tasks" in graph and "contextsim.counting.scripts" in graph
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in packages)


def _layer(name: str) -> str:
    """A web module's layer, by where it sits in its feature (webapp/<feature>/...):
    views (HTTP: `views` modules and packages, and the URL and server entry points),
    services (writes: `services` and the run store's `actions`), tasks (Celery tasks,
    management commands) and reads (everything else: reads, charts, forms, models)."""
    parts = name.split(".")
    if parts[0] != "webapp":
        return "core"
    if "views" in parts or name in ("webapp.urls", "webapp.asgi", "webapp.wsgi"):
        return "views"
    if "services" in parts or "actions" in parts:
        return "services"
    if name in ("webapp", "webapp.tasks", "webapp.celery") or "management" in parts:
        return "tasks"
    return "reads"


def test_in_every_feature_views_call_services_and_services_call_reads_never_back():
    """views -> services -> reads: a read never reaches a write, a write never a view
    or a task, and only the URL and server entry points reach views."""
    below = {"reads": ("services", "tasks", "views"), "services": ("tasks", "views")}
    graph = _graph()
    offenders = {
        name: sorted(i for i in imports if _layer(i) in below[_layer(name)])
        for name, imports in graph.items()
        if _layer(name) in below
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert {_layer(n) for n in graph} >= {"views", "services", "reads", "tasks"}


def test_the_layers_are_told_apart_by_where_a_module_sits():
    assert _layer("webapp.dashboard.views") == "views"
    assert _layer("webapp.access.views.tokens") == "views"
    assert _layer("webapp.ingest.otlp.services.receiving") == "services"
    assert _layer("webapp.store.actions.appends") == "services"
    assert _layer("webapp.store.reads") == "reads"
    assert _layer("webapp.management.commands.serve") == "tasks"


def test_no_module_is_named_for_no_responsibility_or_after_a_folder():
    folders = {
        p.name for package in PACKAGES for p in (ROOT / package).rglob("*") if p.is_dir()
    } | set(PACKAGES)
    bad = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            stem = path.stem
            vague = stem in ("utils", "helpers", "misc", "common")
            if vague or any(stem.startswith(f"{folder}_") for folder in folders):
                bad.append(str(path.relative_to(ROOT)))
    assert bad == []


def test_every_module_says_what_it_is_for():
    missing = [
        name
        for name, path in _modules().items()
        if path.read_text().strip() and ast.get_docstring(ast.parse(path.read_text())) is None
    ]
    assert missing == []


LOWER_STAGES = (
    "contextsim.model",
    "contextsim.ingest",
    "contextsim.counting",
    "contextsim.engine",
    "contextsim.truth",
)
ABOVE = ("contextsim.systems", "contextsim.registry", "contextsim.analysis", "contextsim.cli")


def test_the_engine_and_the_stages_below_it_name_no_agent_system():
    """Systems and the registries sit above the engine: model, ingest, counting, engine
    and truth import none of them (detection alone reads the importers' registry)."""
    offenders = {
        name: sorted(i for i in imports if _within(i, ABOVE))
        for name, imports in _graph().items()
        if _within(name, LOWER_STAGES) and name != "contextsim.ingest.detect"
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert _graph()["contextsim.ingest.detect"] & set(_modules()) == {
        "contextsim.ingest.base",
        "contextsim.registry",
    }


def test_modules_that_share_a_prefix_in_one_folder_are_a_folder_of_their_own():
    """`otel_events.py`, `otel_genai.py`... beside each other say they are one thing: a
    folder named for it (the prefix), not a naming scheme."""
    groups: dict[tuple[Path, str], list[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            stem = path.stem.strip("_")
            if "migrations" in path.parts or "_" not in stem:
                continue
            groups.setdefault((path.parent, stem.split("_")[0]), []).append(path.name)
    shared = {
        f"{folder.relative_to(ROOT)}/{prefix}_*": names
        for (folder, prefix), names in groups.items()
        if len(names) > 1
    }
    assert shared == {}
