"""The table of writing scripts: their names (SCRIPTS) and the code points each covers
(RANGES, the one source of truth; everything not listed is ``other``). Both
contextsim.counting.scriptscan and contextsim.counting.scripts read it; it imports neither.

- ``ascii_alnum``: ASCII digits and letters, 0-9 A-Z a-z.
- ``ascii_other``: the rest of ASCII, U+0000-U+007F: spaces, newlines, punctuation,
  control characters.
- ``latin_accented``: Latin letters beyond ASCII: U+00C0-U+00FF except the signs
  U+00D7 and U+00F7, Latin Extended-A and -B, IPA and spacing modifier letters
  (U+0100-U+02FF), phonetic extensions (U+1D00-U+1DBF), Latin Extended Additional
  (U+1E00-U+1EFF), -C (U+2C60-U+2C7F), -D (U+A720-U+A7FF), -E (U+AB30-U+AB6F) and the
  Latin ligatures U+FB00-U+FB06.
- ``cyrillic``: U+0400-U+052F, U+1C80-U+1C8F, U+2DE0-U+2DFF, U+A640-U+A69F.
- ``greek``: U+0370-U+03FF, Greek Extended U+1F00-U+1FFF.
- ``arabic``: U+0600-U+06FF, U+0750-U+077F, U+0870-U+08FF, presentation forms
  U+FB50-U+FDFF and U+FE70-U+FEFE.
- ``hebrew``: U+0590-U+05FF, presentation forms U+FB1D-U+FB4F.
- ``indic``: Devanagari and the other scripts of India and Sri Lanka (Bengali,
  Gurmukhi, Gujarati, Oriya, Tamil, Telugu, Kannada, Malayalam, Sinhala),
  U+0900-U+0DFF; Vedic extensions U+1CD0-U+1CFF; Syloti Nagri and common Indic number
  forms U+A800-U+A83F; Saurashtra and Devanagari Extended U+A880-U+A8FF.
- ``thai``: U+0E00-U+0E7F.
- ``han``: ideographs and what is written with them: CJK radicals and description
  characters U+2E80-U+2FFF, CJK symbols and punctuation U+3000-U+303F, Bopomofo
  U+3100-U+312F and U+31A0-U+31BF, kanbun and strokes U+3190-U+319F and U+31C0-U+31EF,
  enclosed and compatibility CJK U+3200-U+33FF, Extension A U+3400-U+4DBF, unified
  ideographs U+4E00-U+9FFF, compatibility ideographs U+F900-U+FAFF, CJK vertical,
  compatibility and small forms U+FE10-U+FE1F and U+FE30-U+FE6F, full-width forms and
  half-width CJK punctuation U+FF00-U+FF64 and U+FFE0-U+FFEF, the supplementary planes
  U+20000-U+3FFFF and the ideographic variation selectors U+E0100-U+E01EF.
- ``kana``: hiragana and katakana U+3040-U+30FF, U+31F0-U+31FF, half-width katakana
  U+FF65-U+FF9F, kana supplements U+1AFF0-U+1B16F.
- ``hangul``: jamo U+1100-U+11FF, U+3130-U+318F, U+A960-U+A97F, syllables and
  jamo extended-B U+AC00-U+D7FF, half-width U+FFA0-U+FFDF.
- ``emoji``: the pictograph blocks U+2600-U+27BF and U+1F000-U+1FFFF, and what only
  builds emoji: ZERO WIDTH JOINER U+200D, variation selectors U+FE00-U+FE0F, the
  keycap mark U+20E3 and tag characters U+E0000-U+E007F. So a ZWJ sequence such as
  a family or a flag with tags is emoji from end to end.
- ``other``: everything else: Latin-1 punctuation and symbols (U+0080-U+00BF, U+00D7, U+00F7),
  general punctuation, currency, arrows, mathematical and technical symbols, box
  drawing, other scripts (Armenian, Georgian, Ethiopic, Syriac, Tibetan, Khmer...),
  private use, unassigned code points and lone surrogates.

Combining marks that belong to no script (U+0300-U+036F, U+1AB0-U+1AFF,
U+1DC0-U+1DFF, U+20D0-U+20FF but U+20E3, U+FE20-U+FE2F) count with the script of the
character they follow (a decomposed "é" is two ``latin_accented`` characters; "e" plus
U+0301 is two ``ascii_alnum`` characters: the tokenizer sees an ASCII letter there), or
as ``other`` at the start of a text. Marks inside a script's own block (Devanagari
vowel signs, Arabic harakat, Hebrew points, Thai vowels) are that script's.
"""

from __future__ import annotations

from bisect import bisect_right

SCRIPTS = (
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
"""Script names, in display order."""

MARK = "mark"
"""RANGES class of combining marks that take the script of the character before them."""

RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0000, 0x002F, "ascii_other"),
    (0x0030, 0x0039, "ascii_alnum"),
    (0x003A, 0x0040, "ascii_other"),
    (0x0041, 0x005A, "ascii_alnum"),
    (0x005B, 0x0060, "ascii_other"),
    (0x0061, 0x007A, "ascii_alnum"),
    (0x007B, 0x007F, "ascii_other"),
    (0x00C0, 0x00D6, "latin_accented"),
    (0x00D8, 0x00F6, "latin_accented"),
    (0x00F8, 0x02FF, "latin_accented"),
    (0x0300, 0x036F, MARK),
    (0x0370, 0x03FF, "greek"),
    (0x0400, 0x052F, "cyrillic"),
    (0x0590, 0x05FF, "hebrew"),
    (0x0600, 0x06FF, "arabic"),
    (0x0750, 0x077F, "arabic"),
    (0x0870, 0x08FF, "arabic"),
    (0x0900, 0x0DFF, "indic"),
    (0x0E00, 0x0E7F, "thai"),
    (0x1100, 0x11FF, "hangul"),
    (0x1AB0, 0x1AFF, MARK),
    (0x1C80, 0x1C8F, "cyrillic"),
    (0x1CD0, 0x1CFF, "indic"),
    (0x1D00, 0x1DBF, "latin_accented"),
    (0x1DC0, 0x1DFF, MARK),
    (0x1E00, 0x1EFF, "latin_accented"),
    (0x1F00, 0x1FFF, "greek"),
    (0x200D, 0x200D, "emoji"),
    (0x20D0, 0x20E2, MARK),
    (0x20E3, 0x20E3, "emoji"),
    (0x20E4, 0x20FF, MARK),
    (0x2600, 0x27BF, "emoji"),
    (0x2C60, 0x2C7F, "latin_accented"),
    (0x2DE0, 0x2DFF, "cyrillic"),
    (0x2E80, 0x303F, "han"),
    (0x3040, 0x30FF, "kana"),
    (0x3100, 0x312F, "han"),
    (0x3130, 0x318F, "hangul"),
    (0x3190, 0x31EF, "han"),
    (0x31F0, 0x31FF, "kana"),
    (0x3200, 0x4DBF, "han"),
    (0x4E00, 0x9FFF, "han"),
    (0xA640, 0xA69F, "cyrillic"),
    (0xA720, 0xA7FF, "latin_accented"),
    (0xA800, 0xA83F, "indic"),
    (0xA880, 0xA8FF, "indic"),
    (0xA960, 0xA97F, "hangul"),
    (0xAB30, 0xAB6F, "latin_accented"),
    (0xAC00, 0xD7FF, "hangul"),
    (0xF900, 0xFAFF, "han"),
    (0xFB00, 0xFB06, "latin_accented"),
    (0xFB1D, 0xFB4F, "hebrew"),
    (0xFB50, 0xFDFF, "arabic"),
    (0xFE00, 0xFE0F, "emoji"),
    (0xFE10, 0xFE1F, "han"),
    (0xFE20, 0xFE2F, MARK),
    (0xFE30, 0xFE6F, "han"),
    (0xFE70, 0xFEFE, "arabic"),
    (0xFF00, 0xFF64, "han"),
    (0xFF65, 0xFF9F, "kana"),
    (0xFFA0, 0xFFDF, "hangul"),
    (0xFFE0, 0xFFEF, "han"),
    (0x1AFF0, 0x1B16F, "kana"),
    (0x1F000, 0x1FFFF, "emoji"),
    (0x20000, 0x3FFFF, "han"),
    (0xE0000, 0xE007F, "emoji"),
    (0xE0100, 0xE01EF, "han"),
)
"""(first, last, script or MARK) code point ranges, sorted and disjoint; gaps are other."""

_STARTS = [first for first, _, _ in RANGES]


def range_class(code: int) -> str:
    """The RANGES class of code point `code`: a script name, MARK, or "other"."""
    i = bisect_right(_STARTS, code) - 1
    if i >= 0 and code <= RANGES[i][1]:
        return RANGES[i][2]
    return "other"


def script_of(char: str) -> str:
    """The script of the single character `char` on its own (a lone combining mark,
    having no character before it, is ``other``)."""
    found = range_class(ord(char))
    return "other" if found == MARK else found
