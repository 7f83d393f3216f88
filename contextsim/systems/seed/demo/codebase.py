"""The files and tool outputs the demo's main agent sees: a small Python project that
checks the chronicle's chapters against the editor's notes.

Everything is English text and code written for the demo; sizes range from one line
(a grep hit) to tens of thousands of characters (a failing test run over 320 chapters),
so the main run mixes small and large tool results.
"""

# ruff: noqa: RUF001
# (The checked book is Russian: Cyrillic in the patterns below is intended.)

from __future__ import annotations

CHAPTER_COUNT = 320

# (name, what it extracts, regular expression) for the generated checks.
_FIELDS = (
    ("years", "years", r"\b1[89]\d\d\b"),
    ("distances", "distances in versts", r"\b(\d+) верст"),
    ("surnames", "surnames", r"\b[А-ЯЁ][а-яё]+(?:ов|ев|ин|ский|ницкий|ухин)а?\b"),
    ("places", "place names", r"\b[А-ЯЁ][а-яё]+(?:ск|овка|ино|град|озёрье)\b"),
    ("sheets", "archive sheet references", r"\(л\. (\d+)(?: об\.)?\)"),
    ("files", "archive file references", r"\(ф\. (\d+), оп\. (\d+), д\. (\d+)\)"),
    ("documents", "quoted document headings", r"«([А-ЯЁ ]+)»"),
    ("dates", "day-of-month dates", r"\b(\d{1,2})-го числа\b"),
)

_HEADER = '''"""Check the chronicle's chapters against the editor's notes.

Each check extracts one kind of fact from a chapter and reports the values its note
does not mention. `check_chapter` runs them all; the nightly job calls it per chapter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

BOOK = Path(__file__).resolve().parents[2] / "book"


def chapter_path(number: int) -> Path:
    return BOOK / "chapters" / f"{number:02d}.md"


@dataclass(frozen=True)
class Chapter:
    number: int
    text: str


@dataclass(frozen=True)
class Note:
    number: int
    text: str


@dataclass(frozen=True)
class Finding:
    chapter: int
    field: str
    value: str


def load_chapter(number: int) -> Chapter:
    return Chapter(number, chapter_path(number).read_text(encoding="utf-8"))
'''

_CHECK = '''

def extract_{name}(text: str) -> set[str]:
    """The {label} named in `text`."""
    return {{str(m) for m in re.findall(r"{pattern}", text)}}


def check_{name}(chapter: Chapter, note: Note) -> list[Finding]:
    """The {label} of `chapter` that its note does not mention."""
    expected = extract_{name}(note.text)
    return [
        Finding(chapter.number, "{name}", value)
        for value in sorted(extract_{name}(chapter.text) - expected)
    ]
'''

_FOOTER = '''

CHECKS = ({names},)


def check_chapter(chapter: Chapter, note: Note) -> list[Finding]:
    """Every finding of every check, in check order."""
    return [finding for check in CHECKS for finding in check(chapter, note)]
'''

OLD_PATH_LINE = 'f"{number:02d}.md"'
NEW_PATH_LINE = 'f"{number:03d}.md"'


def checks_module() -> str:
    """src/chronicle/checks.py as the agent first reads it (with the two-digit bug)."""
    body = "".join(_CHECK.format(name=n, label=label, pattern=p) for n, label, p in _FIELDS)
    names = ", ".join(f"check_{n}" for n, _, _ in _FIELDS)
    return _HEADER + body + _FOOTER.format(names=names)


def _line_of(text: str, needle: str) -> tuple[int, str]:
    """The 1-based number and text of the first line of `text` containing `needle`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number, line
    raise ValueError(needle)


def grep_paths() -> str:
    """grep for '"chapters"' in src: where chapter paths are built."""
    number, line = _line_of(checks_module(), OLD_PATH_LINE)
    return (
        f"src/chronicle/checks.py:{number}:{line}\n"
        'src/chronicle/nightly.py:22:    log.info("checking %s", BOOK / "chapters")'
    )


def failing_checks_run() -> str:
    """pytest on tests/test_checks.py before the fix: every chapter's file is missing."""
    number, line = _line_of(checks_module(), "read_text")
    failures = "\n".join(
        f"FAILED tests/test_checks.py::test_chapter_matches_note[{n:03d}] - "
        f"FileNotFoundError: [Errno 2] No such file or directory: "
        f"'book/chapters/{n:02d}.md'"
        for n in range(1, CHAPTER_COUNT + 1)
    )
    return (
        "============================= test session starts ==============================\n"
        f"collected {CHAPTER_COUNT + 12} items\n\n"
        f"tests/test_checks.py {'F' * CHAPTER_COUNT}{'.' * 12}\n\n"
        "=================================== FAILURES ===================================\n"
        "______________________ test_chapter_matches_note[001] _________________________\n\n"
        "    def test_chapter_matches_note(number):\n"
        ">       chapter = load_chapter(number)\n\n"
        f"src/chronicle/checks.py:{number}: in load_chapter\n"
        f"{line}\n"
        "E   FileNotFoundError: [Errno 2] No such file or directory: 'book/chapters/01.md'\n"
        "=========================== short test summary info ============================\n"
        f"{failures}\n"
        f"======================= {CHAPTER_COUNT} failed, 12 passed in 3.87s "
        "========================"
    )


def passing_checks_run() -> str:
    """pytest on tests/test_checks.py after the fix."""
    return (
        "============================= test session starts ==============================\n"
        f"collected {CHAPTER_COUNT + 12} items\n\n"
        f"tests/test_checks.py {'.' * (CHAPTER_COUNT + 12)}\n\n"
        f"============================= {CHAPTER_COUNT + 12} passed in 4.12s "
        "=============================="
    )


BUDGET_MODULE = '''"""Per-request token budget for subagents."""

from __future__ import annotations

BUDGET = 400_000
"""Tokens we allow one request to carry (the model itself accepts 1,000,000)."""


def estimate_tokens(text: str) -> int:
    """Tokens in `text`, without a tokenizer: about four characters per token."""
    return len(text) // 4


def fits(history: list[str]) -> bool:
    return sum(estimate_tokens(m) for m in history) <= BUDGET
'''


def grep_estimate() -> str:
    """grep for 'def estimate_tokens' in src."""
    number, line = _line_of(BUDGET_MODULE, "def estimate_tokens")
    return f"src/chronicle/budget.py:{number}:{line}"


def failing_budget_run(chars: int, estimated: int, measured: int) -> str:
    """pytest on tests/test_budget.py: the estimate misses a Russian chapter's size.

    `chars`, `estimated` and `measured` are the chapter's characters, its chars/4
    estimate and its o200k count, computed by the caller from the demo's own chapter.
    """
    return (
        "============================= test session starts ==============================\n"
        "collected 4 items\n\n"
        "tests/test_budget.py ..F.\n\n"
        "=================================== FAILURES ===================================\n"
        "_________________________ test_estimate_russian_chapter ________________________\n\n"
        "    def test_estimate_russian_chapter(tokenizer):\n"
        '        chapter = read("book/chapters/001.md")\n'
        f"        assert len(chapter) == {chars}\n"
        ">       assert estimate_tokens(chapter) >= len(tokenizer.encode(chapter))\n"
        f"E       assert {estimated} >= {measured}\n\n"
        "tests/test_budget.py:31: AssertionError\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_budget.py::test_estimate_russian_chapter - "
        f"assert {estimated} >= {measured}\n"
        "========================= 1 failed, 3 passed in 0.41s =========================="
    )


SCRIPT_RULE_SNIPPET = '''def estimate_tokens(text: str) -> int:
    """Tokens in `text` by script: ASCII 4 characters per token, Chinese, Japanese
    and Korean 1, everything else (Cyrillic, accents, emoji...) 2."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    cjk = sum(1 for c in text if is_cjk(c))
    other = len(text) - ascii_chars - cjk
    return math.ceil(ascii_chars / 4 + cjk + other / 2)'''
