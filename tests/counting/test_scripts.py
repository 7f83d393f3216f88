"""Script segmentation: every documented range, every code point against the range
table, combining marks, emoji sequences, astral characters, mixed words, chunk seams."""

# ruff: noqa: RUF001
# (Test strings mix scripts on purpose: Cyrillic letters that look Latin are intended.)

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextsim.counting import scriptscan
from contextsim.counting.scripts import (
    MARK,
    RANGES,
    SCRIPTS,
    count_by_script,
    range_class,
    script_of,
    segments,
)


def reference(text: str) -> dict[str, int]:
    """count_by_script by the documented rule, one character at a time."""
    counts = dict.fromkeys(SCRIPTS, 0)
    previous = "other"
    for char in text:
        found = range_class(ord(char))
        previous = previous if found == MARK else found
        counts[previous] += 1
    return counts


def only(text: str) -> dict[str, int]:
    """The non-zero counts of `text`."""
    return {name: n for name, n in count_by_script(text).items() if n}


def test_scripts_are_the_fourteen_named_in_order():
    assert SCRIPTS == (
        "ascii_alnum",
        "ascii_other",
        "latin_accented",
        "cyrillic",
        "greek",
        "arabic",
        "hebrew",
        "indic",
        "thai",
        "han",
        "kana",
        "hangul",
        "emoji",
        "other",
    )


def test_ranges_are_sorted_disjoint_and_name_known_classes():
    for (_, last, _), (first, _, _) in pairwise(RANGES):
        assert last < first
    assert all(a <= b for a, b, _ in RANGES)
    assert {name for _, _, name in RANGES} <= set(SCRIPTS) | {MARK}


@pytest.mark.parametrize(("first", "last", "name"), RANGES)
def test_each_range_classifies_its_ends_and_middle(first, last, name):
    for code in {first, (first + last) // 2, last}:
        char = chr(code)
        if name == MARK:  # alone, a mark has no base: other; after "a", ascii_alnum
            assert only(char) == {"other": 1}
            assert only("a" + char) == {"ascii_alnum": 2}
        else:
            assert only(char) == {name: 1}, hex(code)
            assert script_of(char) == name


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (0x00BF, "other"),  # Latin-1 punctuation just before the letters
        (0x00D7, "other"),  # multiplication sign inside the Latin-1 letters
        (0x00F7, "other"),  # division sign
        (0x0530, "other"),  # Armenian starts right after Cyrillic Supplement
        (0x058F, "other"),
        (0x0E80, "other"),  # Lao, after Thai
        (0x200C, "other"),  # ZERO WIDTH NON-JOINER is not emoji; the joiner is
        (0x25A1, "other"),
        (0x27C0, "other"),  # mathematical symbols right after the dingbats
        (0x4DC0, "other"),  # Yijing hexagrams, between Extension A and unified Han
        (0xFEFF, "other"),  # byte order mark, after the Arabic presentation forms
        (0x1AFEF, "other"),
        (0x1B170, "other"),
        (0xE0080, "other"),
        (0x10FFFF, "other"),
    ],
)
def test_code_points_beside_ranges_are_other(code, name):
    assert only(chr(code)) == {name: 1}


def test_every_bmp_code_point_scans_as_its_range_class():
    text = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)
    codes = scriptscan.scan(text)
    names = {code: name for name, cs in scriptscan.CODES_OF.items() for code in cs}
    assert len(codes) == len(text)
    wrong = [
        hex(ord(char))
        for char, code in zip(text, codes, strict=True)
        if names.get(code, scriptscan.RARE) not in (scriptscan.RARE, range_class(ord(char)))
    ]
    assert wrong == []


def test_every_code_point_counts_as_the_documented_rule():
    # Chunks of 4,096 code points through count_by_script itself (rare characters,
    # singletons and marks included), against the one-character-at-a-time rule.
    for start in range(0, 0x110000, 0x1000):
        chunk = "".join(chr(c) for c in range(start, start + 0x1000) if not 0xD800 <= c <= 0xDFFF)
        assert count_by_script(chunk) == reference(chunk), hex(start)


def test_counts_cover_every_script_and_sum_to_the_length():
    text = "Hello, мир! Γειά 你好 かな 한글 สวัสดี नमस्ते שלום مرحبا é 😀 ×"
    counts = count_by_script(text)
    assert list(counts) == list(SCRIPTS)
    assert sum(counts.values()) == len(text)
    assert all(counts[name] for name in SCRIPTS)


def test_ascii_letters_and_digits_are_alnum_the_rest_of_ascii_other():
    assert only("abc XYZ 0189") == {"ascii_alnum": 10, "ascii_other": 2}
    assert only("\t\n\r !~\x00\x7f") == {"ascii_other": 8}


def test_combining_marks_take_the_script_of_their_base():
    assert only("e\u0301") == {"ascii_alnum": 2}  # decomposed é: the tokenizer sees an "e"
    assert only("é") == {"latin_accented": 1}  # composed
    assert only("а\u0301") == {"cyrillic": 2}  # stressed Cyrillic vowel
    assert only("ά\u0308\u0301") == {"greek": 3}  # marks stack
    assert only("\u0301x") == {"other": 1, "ascii_alnum": 1}  # no base: other
    assert only("😀\u20dd") == {"emoji": 2}  # enclosing circle on an emoji
    assert only("中\u0345") == {"han": 2}  # a mark from a rare block, U+0340-U+037F


def test_marks_inside_a_scripts_block_belong_to_the_script():
    assert only("कि") == {"indic": 2}  # Devanagari vowel sign
    assert only("بِ") == {"arabic": 2}  # kasra
    assert only("שָׁ") == {"hebrew": 3}  # qamats and shin dot (a rare block: U+0580-U+05BF)
    assert only("กิ") == {"thai": 2}


def test_emoji_sequences_are_emoji_from_end_to_end():
    assert only("👨\u200d👩\u200d👧\u200d👦") == {"emoji": 7}  # family, joined by ZWJ
    assert only("🏳\ufe0f\u200d🌈") == {"emoji": 4}  # rainbow flag
    assert only("👍🏽") == {"emoji": 2}  # skin tone modifier
    assert only("🇫🇷") == {"emoji": 2}  # regional indicators
    assert only("🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f") == {"emoji": 7}
    assert only("❤️") == {"emoji": 2}  # dingbat and VS-16
    assert only("⚠\ufe0e") == {"emoji": 2}  # text presentation selector too


def test_keycaps_and_selectors_on_ascii_keep_the_ascii_base():
    assert only("1\ufe0f\u20e3") == {"ascii_alnum": 1, "emoji": 2}
    assert only("#\ufe0f\u20e3") == {"ascii_other": 1, "emoji": 2}
    assert only("©\ufe0f") == {"other": 1, "emoji": 1}


def test_astral_characters_are_one_code_point_each():
    text = "😀𠀀𝐀🛸"  # emoji, Han Extension B, mathematical bold A, emoji
    assert len(text) == 4
    assert only(text) == {"emoji": 2, "han": 1, "other": 1}
    assert [s for s, _, _ in segments(text)] == ["emoji", "han", "other", "emoji"]


def test_lone_surrogates_are_other():
    assert only("a\ud800b\udfff") == {"ascii_alnum": 2, "other": 2}
    assert only("\ud83d\ude00") == {"other": 2}  # a pair in a str is two lone halves


def test_mixed_words_split_by_script():
    assert only("naïve") == {"ascii_alnum": 4, "latin_accented": 1}
    assert only("iPhone-ом") == {"ascii_alnum": 6, "ascii_other": 1, "cyrillic": 2}
    assert only("Straße") == {"ascii_alnum": 5, "latin_accented": 1}


def test_cjk_punctuation_and_full_width_forms_are_han_half_width_katakana_kana():
    assert only("。、「」") == {"han": 4}
    assert only("，！（ＡＢ）") == {"han": 6}
    assert only("ｶﾀｶﾅ") == {"kana": 4}
    assert only("ㄱㅋ") == {"hangul": 2}  # compatibility jamo, U+3131 is in a rare block


def test_zero_width_joiner_is_emoji_even_between_letters():
    assert only("क्\u200dष") == {"indic": 3, "emoji": 1}


def test_segments_are_runs_that_cover_the_text():
    assert segments("Hello мир!") == [
        ("ascii_alnum", 0, 5),
        ("ascii_other", 5, 6),
        ("cyrillic", 6, 9),
        ("ascii_other", 9, 10),
    ]
    assert segments("e\u0301 ✅") == [("ascii_alnum", 0, 2), ("ascii_other", 2, 3), ("emoji", 3, 4)]
    assert segments("") == []


def test_marks_across_a_chunk_seam_join_their_base():
    size = scriptscan.CHUNK
    text = "a" * (size - 1) + "ж" + "\u0301\u0301" + "b"
    assert count_by_script(text) == reference(text)
    assert segments(text)[-2:] == [
        ("cyrillic", size - 1, size + 2),
        ("ascii_alnum", size + 2, size + 3),
    ]


EVERYTHING = st.characters(exclude_categories=("Cs",))
MARKED = st.sampled_from("\u0301\u0308\u20dd\u200d\ufe0f\u20e3\u0345\ufe20\u1ab0\U000e0067")
TEXT = st.text(st.one_of(EVERYTHING, MARKED, st.sampled_from("aж中😀 \n")), max_size=200)


@given(TEXT)
def test_counts_follow_the_rule_and_sum_to_the_length(text):
    counts = count_by_script(text)
    assert counts == reference(text)
    assert sum(counts.values()) == len(text)


@given(TEXT)
def test_segments_partition_the_text_into_counted_runs(text):
    runs = segments(text)
    assert [start for _, start, _ in runs] == [0, *(end for _, _, end in runs)][: len(runs)]
    assert (runs[-1][2] if runs else 0) == len(text)
    assert all(a[0] != b[0] for a, b in pairwise(runs))
    totals = Counter()
    for name, start, end in runs:
        totals[name] += end - start
    assert dict(totals) == {name: n for name, n in count_by_script(text).items() if n}
