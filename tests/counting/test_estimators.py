"""Estimators: the seed figures, real tiktoken loaded offline with its hash checked, and
message counting with overhead and memo."""

from __future__ import annotations

import hashlib
import sys

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.counting import offline_bpe
from contextsim.counting.estimators import (
    ESTIMATORS,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    CountMemo,
    content_key,
    count_message,
)
from contextsim.model import ImagePart, Message, TextPart, ToolCallPart, ToolResultPart


def test_registry_has_the_four_estimators_then_the_calibrated_ones():
    assert list(ESTIMATORS) == [
        "chars4",
        "script",
        "cl100k",
        "o200k",
        "calibrated-o200k",
        "calibrated-cl100k",
    ]


def test_chars4_rounds_up():
    assert [ESTIMATORS["chars4"].count(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]


def test_script_rule_counts_ascii_4_cjk_1_and_other_2_per_token():
    rule = ESTIMATORS["script"]
    assert rule.count("abcdefgh") == 2
    assert rule.count("中文字") == 3
    assert rule.count("かなカナ한글") == 6
    assert rule.count("привет") == 3
    assert rule.count("árvíztűrő") == 4  # 5 ASCII (1.25) + 4 accented (2) = 3.25, rounded up
    assert rule.count("😀😀") == 1


# The CJK blocks the script rule counts 1 per token, as code points (not the regex).
CJK_BLOCKS = (
    (0x1100, 0x11FF), (0x3000, 0x303F), (0x3040, 0x30FF), (0x3130, 0x318F),
    (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF), (0xFF00, 0xFFEF), (0x20000, 0x3134F),
)  # fmt: skip


def script_rule_by_character(text: str) -> int:
    ascii_chars = sum(ord(c) < 128 for c in text)
    cjk = sum(any(lo <= ord(c) <= hi for lo, hi in CJK_BLOCKS) for c in text)
    other = len(text) - ascii_chars - cjk
    return -(-(ascii_chars * 1 + cjk * 4 + other * 2) // 4)


edges = st.sampled_from(
    [chr(c) for lo, hi in CJK_BLOCKS for c in (lo - 1, lo, hi, hi + 1)] + ["a", "я", "é", "😀"]
)


@given(st.lists(st.text(max_size=40) | edges, max_size=30).map("".join))
def test_script_rule_counts_as_its_definition_character_by_character(text: str):
    assert ESTIMATORS["script"].count(text) == script_rule_by_character(text)


def test_script_rule_overestimates_russian_where_chars4_underestimates():
    text = "Съешь же ещё этих мягких французских булок, да выпей чаю. " * 200
    real = ESTIMATORS["o200k"].count(text)
    assert ESTIMATORS["chars4"].count(text) < real < ESTIMATORS["script"].count(text)


@given(st.text(max_size=300))
def test_tiktoken_estimators_equal_the_real_encodings(text: str):
    for name, encoding in (("cl100k", "cl100k_base"), ("o200k", "o200k_base")):
        assert ESTIMATORS[name].count(text) == len(
            tiktoken.get_encoding(encoding).encode(text, disallowed_special=())
        )


def test_offline_encoding_is_the_file_tiktoken_checks(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    url, expected = offline_bpe.SOURCES["o200k_base"]
    cached = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    cached.write_bytes(b"corrupt")
    offline_bpe._seed_cache("o200k_base")
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == expected


def test_unknown_encoding_is_refused():
    with pytest.raises(offline_bpe.EncodingUnavailable, match="unknown encoding 'p50k_base'"):
        offline_bpe.encoding("p50k_base")


def test_message_count_adds_overhead_arguments_and_images():
    message = Message(
        "assistant",
        (TextPart("abcd"), ToolCallPart("c1", "read", '{"path": "a"}'), ImagePart()),
    )
    chars4 = ESTIMATORS["chars4"]
    expected = 1 + 1 + 4 + IMAGE_TOKENS + MESSAGE_OVERHEAD
    assert count_message(message, chars4) == expected


def test_content_key_depends_on_content_not_on_source():
    a = Message("tool", (ToolResultPart("c1", "x"),), source="line 1")
    b = Message("tool", (ToolResultPart("c1", "x"),), source="line 9")
    c = Message("tool", (ToolResultPart("c1", "y"),))
    assert content_key(a) == content_key(b) != content_key(c)


def test_seeded_counts_are_used_instead_of_tokenizing_again():
    message = Message("tool", (ToolResultPart("c1", "a result seen at import " * 50),))
    key = content_key(message)
    memo = CountMemo()
    memo.seed([("o200k", key, 12_345)])
    assert count_message(message, ESTIMATORS["o200k"], memo=memo) == 12_345
    assert count_message(message, ESTIMATORS["o200k"]) < 12_345  # no memo, no memory
    other = Message("tool", (ToolResultPart("c1", "a different result"),))
    assert count_message(other, ESTIMATORS["o200k"], memo=memo) < 100


def test_a_memo_forgets_everything_at_its_limit_rather_than_grow():
    memo = CountMemo(limit=2)
    one, two, three = (Message("user", (TextPart(t),)) for t in ("one", "two", "three"))
    for message in (one, two):
        memo.count(message, ESTIMATORS["chars4"])
    memo.seed([("chars4", content_key(one), 999)])
    assert memo.count(one, ESTIMATORS["chars4"]) == 999
    memo.count(three, ESTIMATORS["chars4"])  # a third message: it starts afresh
    assert memo.count(one, ESTIMATORS["chars4"]) < 999


@pytest.mark.parametrize("name", ["cl100k", "o200k"])
def test_counting_leaves_no_utf8_copy_inside_the_text(name: str):
    # CPython keeps a str's UTF-8 form inside it once a C extension asks for it: a
    # run's non-ASCII messages would be held twice for as long as the run.
    text = "результат ответа 结果 " * 2_000
    before = sys.getsizeof(text)
    assert ESTIMATORS[name].count(text) > 0
    assert sys.getsizeof(text) == before


TEXTS = st.lists(
    st.sampled_from([*"ab Z9 \n\t.,'-_é中🙂", "don't", "  ", "12345", "ab\r\n", "word"]),
    max_size=200,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.integers(1, 40))
def test_a_long_text_counted_a_piece_at_a_time_counts_the_same(text, size):
    from contextsim.counting.estimators import pieces

    cut = list(pieces(text, size))
    assert "".join(cut) == text and all(len(p) >= size for p in cut[:-1])
    for name in ("o200k", "cl100k"):
        tokenizer = ESTIMATORS[name]
        whole = tokenizer._count(text)  # type: ignore[attr-defined]
        assert sum(tokenizer._count(p) for p in cut) == whole, (name, cut)  # type: ignore[attr-defined]
