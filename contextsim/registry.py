"""The registries: every system's importers, policies and exporters, by name.

Built from one list of systems (SYSTEMS, dotted paths of packages under
contextsim.systems, each with a manifest), the way healthchecks registers its
integrations: a system's parts are imported when a registry is first used, not before.
The registries sit above the engine: the CLI and the web app pick an importer, a policy
or an exporter here by name and hand the object to ingest or the engine, which name no
agent system.

Order matters: detection tries the importers in SYSTEMS order, and the pages list the
policies in it (as_logged, the log's own replay, first).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from contextsim.analysis.tuning import Mechanism
from contextsim.engine.as_logged import LoggedPolicy
from contextsim.engine.policy import Policy
from contextsim.ingest.base import Importer
from contextsim.systems.exporting import ExportContext, Exporter, Snippet
from contextsim.systems.manifest import System

__all__ = [
    "EVERY_MECHANISM",
    "EXPORTERS",
    "IMPORTERS",
    "MECHANISMS",
    "POLICIES",
    "SYSTEMS",
    "SYSTEM_POLICIES",
    "ExportContext",
    "Snippet",
    "export",
]

SYSTEMS = (
    "contextsim.systems.native",
    "contextsim.systems.seed",
    "contextsim.systems.claude_code",
    "contextsim.systems.codex",
    "contextsim.systems.gemini_cli",
    "contextsim.systems.claude_trace",
    "contextsim.systems.inspect_ai",
    "contextsim.systems.anthropic_api",
    "contextsim.systems.openai_api",
    "contextsim.systems.swe_agent",
    "contextsim.systems.openhands",
    "contextsim.systems.langchain",
    "contextsim.systems.otel",
    "contextsim.systems.letta",
    "contextsim.systems.adk",
    "contextsim.systems.gemini_api",
)
"""The systems, in detection and listing order (formats that other formats' files
could be mistaken for come later)."""

T = TypeVar("T")


class Registry(Mapping[str, T]):
    """A read-only mapping filled by `load` on first use (once, whichever thread asks
    first); what it holds never changes after."""

    def __init__(self, load: Callable[[], dict[str, T]]) -> None:
        self._load = load
        self._found: dict[str, T] | None = None
        self._lock = threading.Lock()

    def loaded(self) -> dict[str, T]:
        """The dict behind the registry, loaded: for a test that registers a stand-in
        part for its duration (monkeypatch.setitem); nothing else writes to it."""
        return self._items()

    def _items(self) -> dict[str, T]:
        found = self._found
        if found is None:
            with self._lock:
                if self._found is None:
                    self._found = self._load()
                found = self._found
        return found

    def __getitem__(self, name: str) -> T:
        return self._items()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return f"Registry({list(self._items())!r})"


def manifests() -> list[tuple[str, System]]:
    """Each system's package and manifest, in SYSTEMS order."""
    found = []
    for package in SYSTEMS:
        manifest = importlib.import_module(package).SYSTEM
        assert isinstance(manifest, System), package
        found.append((package, manifest))
    return found


def _part(package: str, path: str) -> Any:
    """The attribute a manifest's "module:attribute" path names."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(f"{package}.{module}"), attribute)


def _importers() -> dict[str, Importer]:
    made = (_part(pkg, path)() for pkg, system in manifests() for path in system.importers)
    return {i.name: i for i in made}


def _policies() -> dict[str, Policy]:
    made = [_part(pkg, path)() for pkg, system in manifests() for path in system.policies]
    return {p.name: p for p in (LoggedPolicy(), *made)}


def _exporters() -> dict[str, Exporter]:
    found: dict[str, Exporter] = {}
    for package, system in manifests():
        if system.exports is not None:
            found.update(_part(package, system.exports))
    return found


def _providers() -> dict[str, str]:
    return {
        _part(pkg, path).name: system.provider
        for pkg, system in manifests()
        for path in system.importers
    }


IMPORTERS: Mapping[str, Importer] = Registry(_importers)
"""Format name -> its importer, in detection order."""
POLICIES: Mapping[str, Policy] = Registry(_policies)
"""Policy name -> the policy, as_logged first."""
EXPORTERS: Mapping[str, Exporter] = Registry(_exporters)
"""Policy name -> its exporter (a policy without a real counterpart has none)."""
PROVIDERS: Mapping[str, str] = Registry(_providers)
"""Format name -> the provider whose list prices its runs fall back to."""


def _system_policies() -> dict[str, tuple[str, ...]]:
    return {
        _part(pkg, path).name: tuple(_part(pkg, p).name for p in system.policies)
        for pkg, system in manifests()
        for path in system.importers
    }


SYSTEM_POLICIES: Mapping[str, tuple[str, ...]] = Registry(_system_policies)
"""Format name -> the names of its system's own policies (the mechanisms the agent
that wrote the log can use), in the system's order; () for a format whose system
has none."""


def own_trigger(format_name: str) -> Policy | None:
    """The first of the format's system's policies that says where it compacts (a
    `trigger`, engine.policy.policy_trigger): the system's own compaction, whose
    threshold explains the log's automatic compactions; None when it has none."""
    for name in SYSTEM_POLICIES.get(format_name, ()):
        if getattr(POLICIES[name], "trigger", None) is not None:
            return POLICIES[name]
    return None


def _mechanisms() -> dict[str, tuple[Mechanism, ...]]:
    systems = manifests()
    apis: dict[str, tuple[Mechanism, ...]] = {}
    for package, system in systems:
        if system.api_of is not None and system.mechanisms:
            apis[system.api_of] = apis.get(system.api_of, ()) + tuple(
                _part(package, system.mechanisms)
            )
    out: dict[str, tuple[Mechanism, ...]] = {}
    for package, system in systems:
        mine = tuple(_part(package, system.mechanisms)) if system.mechanisms else ()
        names = {m.name for m in mine}
        extra = apis.get(system.uses_api, ()) if system.uses_api else ()
        found = mine + tuple(m for m in extra if m.name not in names)
        for path in system.importers:
            out[_part(package, path).name] = found
    return out


MECHANISMS: Mapping[str, tuple[Mechanism, ...]] = Registry(_mechanisms)
"""Format name -> the context mechanisms its runs' users can set: its system's own,
then those of the API it calls with its user's settings, when it says so
(System.uses_api; contextsim.analysis.tuning)."""


def _every_mechanism() -> dict[str, Mechanism]:
    found: dict[str, Mechanism] = {}
    for package, system in manifests():
        for m in _part(package, system.mechanisms) if system.mechanisms else ():
            if m.name in found:
                raise ValueError(f"{package}: mechanism {m.name!r} is declared twice")
            found[m.name] = m
    return found


EVERY_MECHANISM: Mapping[str, Mechanism] = Registry(_every_mechanism)
"""Mechanism name -> the mechanism, whatever system declares it (names are unique):
what a person may ask for by name on any run."""


def mechanisms(format_name: str) -> tuple[Mechanism, ...]:
    """The mechanisms a run of this format can be tuned for; () for an unknown format."""
    return MECHANISMS.get(format_name, ())


def export(policy: str, ctx: ExportContext) -> tuple[Snippet, ...]:
    """The snippets that make the real system behave as `policy` simulates with
    `ctx`; () for a policy without a real counterpart."""
    found = EXPORTERS.get(policy)
    return () if found is None else found(ctx)
