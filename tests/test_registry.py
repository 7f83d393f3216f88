"""The registries are built from the system folders: a folder with a manifest is a
system, listed once, whose every part imports and is registered by its own name."""

from __future__ import annotations

import importlib
from pathlib import Path

from contextsim import registry
from contextsim.systems.manifest import System

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ROOT / "contextsim" / "systems"


def _folders() -> set[str]:
    return {p.parent.name for p in SYSTEMS.glob("*/__init__.py")}


def test_every_system_folder_is_listed_once_and_every_listed_system_is_a_folder():
    listed = [name.rpartition(".")[2] for name in registry.SYSTEMS]
    assert len(listed) == len(set(listed))
    assert set(listed) == _folders()


def test_every_system_has_a_manifest_a_readme_and_a_test_folder():
    for name in _folders():
        manifest = importlib.import_module(f"contextsim.systems.{name}").SYSTEM
        assert isinstance(manifest, System) and manifest.label, name
        assert (SYSTEMS / name / "README.md").is_file(), name
        assert (ROOT / "tests" / "systems" / name).is_dir(), name


def test_every_part_a_manifest_names_is_registered_under_its_own_name():
    for package, system in registry.manifests():
        for path in system.importers:
            module, _, attribute = path.partition(":")
            made = getattr(importlib.import_module(f"{package}.{module}"), attribute)()
            assert callable(made.sniff) and callable(made.parse)
            assert type(registry.IMPORTERS[made.name]) is type(made)
        for path in system.policies:
            module, _, attribute = path.partition(":")
            made = getattr(importlib.import_module(f"{package}.{module}"), attribute)()
            assert callable(made.setup) and made.source and made.label.startswith(made.name)
            assert type(registry.POLICIES[made.name]) is type(made)


def test_every_exporter_exports_a_registered_policy_and_as_logged_comes_first():
    assert set(registry.EXPORTERS) <= set(registry.POLICIES)
    assert next(iter(registry.POLICIES)) == "as_logged"
    assert next(iter(registry.IMPORTERS)) == "native"


def test_each_format_falls_back_to_its_systems_provider_for_prices():
    assert registry.PROVIDERS["codex"] == "openai"
    assert registry.PROVIDERS["claude-code"] == "anthropic"
    assert set(registry.PROVIDERS) == set(registry.IMPORTERS)
