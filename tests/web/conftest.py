from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from contextsim.ingest.base import ParsedFile
from contextsim.systems.seed.demo import demo_runs
from webapp.models import Run, Visibility
from webapp.store.actions.saving import do_save_runs


@pytest.fixture(autouse=True)
def media_in_tmp(settings, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.LOCAL_USER = ""


@pytest.fixture
def alice(db) -> User:
    return User.objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def bob(db) -> User:
    return User.objects.create_user("bob", password="pw-bob-123")


@pytest.fixture
def alice_client(alice: User) -> Client:
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def fleet(alice: User) -> list[Run]:
    """The seed incident's 8 subagents (and their main agent) at a small scale: chapters
    of 4,000 characters, counted with chars4 only. At a 40,000 hard limit `turns` rejects
    every subagent and `mythex` none."""
    runs = demo_runs("subagents", chapter_chars=4_000)
    saved = do_save_runs(
        ParsedFile("demo", runs), owner=alice, visibility=Visibility.PRIVATE, estimators=("chars4",)
    )
    return list(saved)


@pytest.fixture(autouse=True)
def fresh_rate_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no attempts counted (the counts live in the cache), and
    its attempts fall in one rate-limit window: django-ratelimit's windows end at some
    second of every minute, and a test whose requests straddle that second (a few
    password hashes on a busy machine) would see its count start again."""
    from django.core.cache import cache
    from django_ratelimit import core as ratelimit

    cache.clear()
    frozen = time.time()
    # Only django-ratelimit's clock: its module's `time`, not the time module itself.
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: frozen))


@pytest.fixture
def upstream_url() -> Iterator[tuple[Any, str]]:
    """The fake model API (tests/upstream.py) served on loopback, and its address."""
    from tests.upstream import Upstream, serving

    upstream = Upstream()
    with serving(upstream) as url:
        yield upstream, url
