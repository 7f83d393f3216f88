"""Attribution of real tokens to scripts: integer counts that sum exactly to tiktoken's
token count, whatever the text (astral characters, combining marks, byte-split tokens)."""

# ruff: noqa: RUF001
# (Test strings mix scripts on purpose: Cyrillic letters that look Latin are intended.)

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextsim.counting.attribution import ALIASES, attribute, byte_segments, token_lengths
from contextsim.counting.offline_bpe import encoding
from contextsim.counting.scripts import SCRIPTS

ENCODINGS = ("o200k_base", "cl100k_base")


def real(text: str, name: str) -> int:
    return len(encoding(name).encode_ordinary(text))


def only(counts: dict[str, int]) -> dict[str, int]:
    return {name: n for name, n in counts.items() if n}


@pytest.mark.parametrize("name", ENCODINGS)
def test_counts_are_every_script_and_sum_to_the_token_count(name):
    text = "Hello, мир! 你好 😀 é e\u0301 👨\u200d👩\u200d👧"
    counts = attribute(text, name)
    assert list(counts) == list(SCRIPTS)
    assert sum(counts.values()) == real(text, name)


def test_short_names_are_the_estimators_names():
    assert ALIASES == {"o200k": "o200k_base", "cl100k": "cl100k_base"}
    assert attribute("Привет", "o200k") == attribute("Привет", "o200k_base")


def test_a_word_takes_its_leading_space():
    assert only(attribute("hello world", "o200k")) == {"ascii_alnum": 2}
    assert only(attribute("мир мир", "o200k_base")) == {"cyrillic": 3}  # "м" "ир" " мир"
    assert only(attribute("\n\n", "o200k")) == {"ascii_other": 1}


@pytest.mark.parametrize("name", ENCODINGS)
def test_tokens_that_split_a_character_all_go_to_its_script(name):
    # Rare astral ideographs and an emoji are encoded as several byte-level tokens.
    text = "𠀀𠀁𪚥🛸"
    counts = attribute(text, name)
    assert sum(counts.values()) == real(text, name) > len(text)
    assert only(counts).keys() <= {"han", "emoji"}


def test_ties_go_to_the_script_listed_first_and_ascii_other_loses():
    from contextsim.counting.attribution import _majority

    bounds = [(1, "ascii_other"), (2, "ascii_alnum"), (4, "cyrillic"), (6, "greek")]
    assert _majority(bounds, 0, 0, 2) == "ascii_alnum"  # one byte each: other loses
    assert _majority(bounds, 2, 2, 6) == "cyrillic"  # two bytes each: listed first


def test_byte_segments_end_at_each_runs_utf8_length():
    assert byte_segments("aб😀") == [(1, "ascii_alnum"), (3, "cyrillic"), (7, "emoji")]
    assert byte_segments("\ud800") == [(3, "other")]  # as tiktoken's replacement character
    assert sum(token_lengths("aб😀", "o200k")) == 7


def test_lone_surrogates_are_counted_like_tiktoken_counts_them():
    text = "a\ud800b\udfffc"
    for name in ENCODINGS:
        assert sum(attribute(text, name).values()) == real(text, name)


def test_empty_text_has_no_tokens():
    assert sum(attribute("", "o200k").values()) == 0


TEXT = st.text(
    st.one_of(
        st.characters(exclude_categories=("Cs",)),
        st.sampled_from("\u0301\u0308\u200d\ufe0f\u20e3 aж中😀𠀀\n"),
    ),
    max_size=300,
)


@settings(max_examples=150)
@given(TEXT)
def test_random_text_sums_exactly_to_the_token_count(text):
    for name in ENCODINGS:
        assert sum(attribute(text, name).values()) == real(text, name)


def test_corpus_files_sum_exactly_and_go_mostly_to_their_script(corpus):
    main = {
        "udhr_ar_arb": "arabic",
        "udhr_el_ell_monotonic": "greek",
        "udhr_en_eng": "ascii_alnum",
        "udhr_hi_hin": "indic",
        "udhr_hu_hun": "ascii_alnum",
        "udhr_ja_jpn": "han",
        "udhr_ko_kor": "hangul",
        "udhr_ru_rus": "cyrillic",
        "udhr_zh_cmn_hans": "han",
        "literary_en_botchan_excerpt": "ascii_alnum",
    }
    for path in sorted((corpus / "multilingual").glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        for name in ENCODINGS:
            counts = attribute(text, name)
            assert sum(counts.values()) == real(text, name), path.name
            assert max(counts, key=counts.__getitem__) == main[path.stem], path.name
