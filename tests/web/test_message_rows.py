"""Stored values never hold NUL (PostgreSQL refuses it in text and JSON)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from webapp.services.message_rows import storable

TEXT = st.text(alphabet=st.sampled_from(["a", "\x00", "\\", "u", "0", "é", "中"]), max_size=8)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


def _expected(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_expected(k): _expected(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expected(v) for v in value]
    return value


@given(JSON)
def test_storable_replaces_every_nul_in_keys_and_values_and_nothing_else(value):
    assert storable(value) == _expected(value)


def test_a_value_without_nul_is_stored_as_it_is_not_copied():
    skeleton = {"tokens": list(range(1_000)), "names": ["read", "write"]}
    assert storable(skeleton) is skeleton
