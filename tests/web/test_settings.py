"""Settings read from the environment say what is wrong with a value instead of
guessing."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp.settings import env_bool


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), ("TRUE", True), (" on ", True), ("0", False), ("off", False), ("", False)],
)
def test_a_boolean_setting_reads_the_usual_words(monkeypatch, value, expected):
    monkeypatch.setenv("CONTEXTSIM_TEST_FLAG", value)
    assert env_bool("CONTEXTSIM_TEST_FLAG", not expected) is expected


def test_an_unset_boolean_setting_is_its_default(monkeypatch):
    monkeypatch.delenv("CONTEXTSIM_TEST_FLAG", raising=False)
    assert env_bool("CONTEXTSIM_TEST_FLAG", True) is True


def test_a_misspelt_boolean_setting_stops_the_start_naming_the_variable(monkeypatch):
    monkeypatch.setenv("CONTEXTSIM_HTTPS", "ture")
    with pytest.raises(ImproperlyConfigured, match="CONTEXTSIM_HTTPS='ture': expected one of"):
        env_bool("CONTEXTSIM_HTTPS", False)
