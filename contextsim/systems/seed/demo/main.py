"""The demo's main agent: four user turns of coding work that start the subagents.

Turn 1 fixes a bug with grep, read_file, edit_file and run_tests; turn 2 fans the
chapter check out to the 8 subagents with 8 parallel `task` calls (their results are
the subagents' final answers); turn 3 looks into the token estimate that let them grow;
turn 4 starts the re-check subagent that stops early. Mostly English with code, plus
one large grep of the Russian notes; about 40,000 o200k tokens at the end, with
measured usage computed like the subagents'.
"""

from __future__ import annotations

from contextsim.counting.estimators import ESTIMATORS, CountMemo
from contextsim.model import Run
from contextsim.systems.seed.demo import codebase
from contextsim.systems.seed.demo.build import REFERENCE, RunBuilder
from contextsim.systems.seed.demo.subagents import (
    CHAPTERS_PER_SUBAGENT,
    MAIN_SESSION,
    SUBAGENTS,
    chapter_range,
    early_stop_report,
    finding,
    report,
    span,
    task_arguments,
)
from contextsim.systems.seed.demo.text import chapter_note, chapter_text

SYSTEM_PROMPT = """You are the coding agent of a writing assistant, working in the \
repository of a book project: a chronicle in Russian (book/chapters/NNN.md, 320 \
chapters), the editor's notes on it (notes/chapters.md) and the Python package that \
checks one against the other (src/chronicle).

Work in small verified steps: find the code, read it, run the tests, change as little \
as possible, run the tests again.

Tools:
- read_file(path): the text of a file.
- grep(pattern, path): matching lines, as path:line:text.
- run_tests(path): runs pytest on path and returns its output.
- edit_file(path, old, new): replaces the exact text old with new in path.
- task(description, prompt, attach): starts a subagent with prompt (the attached \
section of a file appended) and returns its final reply. Several task calls in one \
message run in parallel.

Answer the user in English, briefly; put code in fenced blocks."""

CHECKS = "src/chronicle/checks.py"


def _fix_turn(b: RunBuilder) -> None:
    """Turn 1: a path bug found with grep, read_file and run_tests, then fixed."""
    b.user(
        "The nightly check_chapters job has failed every night since we added chapter "
        "100. Can you find out why and fix it?"
    )
    grep = b.new_call("grep", {"pattern": '"chapters"', "path": "src"})
    b.call("I'll start with where the job builds chapter paths.", grep)
    b.result(grep, codebase.grep_paths())
    read = b.new_call("read_file", {"path": CHECKS})
    b.call("", read)
    b.result(read, codebase.checks_module())
    test = b.new_call("run_tests", {"path": "tests/test_checks.py"})
    b.call(
        "`chapter_path` pads the number to two digits, but the chapter files have "
        "three-digit names now. Let me confirm with the tests.",
        test,
    )
    b.result(test, codebase.failing_checks_run())
    edit = b.new_call(
        "edit_file",
        {"path": CHECKS, "old": codebase.OLD_PATH_LINE, "new": codebase.NEW_PATH_LINE},
    )
    b.call("Every chapter fails the same way. Fixing the padding:", edit)
    b.result(edit, f"Replaced 1 occurrence in {CHECKS}.")
    rerun = b.new_call("run_tests", {"path": "tests/test_checks.py"})
    b.call("", rerun)
    b.result(rerun, codebase.passing_checks_run())
    b.answer(
        "Fixed. When chapter 100 was added the chapter files were renamed to three "
        "digits (`001.md` ... `320.md`), but `chapter_path` still padded to two, so "
        "every chapter was looked up under a name that no longer exists:\n\n"
        "```python\ndef chapter_path(number: int) -> Path:\n"
        '    return BOOK / "chapters" / f"{number:03d}.md"\n```\n\n'
        "All 332 tests pass now."
    )


def _notes_grep(chapters: int, width: int = 120) -> str:
    """grep output for each chapter's note line, cut at `width` as ripgrep's
    --max-columns would: a large Russian result in an otherwise English run."""
    lines = []
    for number in range(1, chapters + 1):
        note = chapter_note(number)
        # The notes file has a title line and a blank line, then one note per paragraph.
        lines.append(
            f"notes/chapters.md:{2 * number + 1}:{note[:width]} "
            f"[... {len(note) - width} more characters]"
        )
    return "\n".join(lines)


def _fan_out_turn(b: RunBuilder) -> None:
    """Turn 2: 8 parallel task calls; each result is that subagent's final answer."""
    b.user(
        "Great. Now check all 320 chapters against the editor's notes. Split the work "
        "over 8 subagents, 40 chapters each."
    )
    grep = b.new_call("grep", {"pattern": r"^Глава \d+:", "path": "notes/chapters.md"})
    b.call("First, a look at whether the notes cover every chapter.", grep)
    b.result(grep, _notes_grep(SUBAGENTS * CHAPTERS_PER_SUBAGENT))
    calls = [b.new_call("task", task_arguments(chapter_range(i))) for i in range(1, SUBAGENTS + 1)]
    b.call("The notes cover all 320 chapters. Starting 8 subagents, 40 chapters each.", *calls)
    for index, call in enumerate(calls, start=1):
        b.result(call, report(index))
    differing = [
        n for n in range(1, SUBAGENTS * CHAPTERS_PER_SUBAGENT + 1) if finding(n) is not None
    ]
    listed = ", ".join(str(n) for n in differing)
    b.answer(
        f"All 8 subagents reported back. {len(differing)} of 320 chapters differ from "
        f"their notes: {listed}. They are years off by one, distances to the mill and "
        "spellings of a clerk's surname; each subagent's report above has the details."
    )


def _estimate_turn(b: RunBuilder, chapter_chars: int) -> None:
    """Turn 3: why the token estimate let the subagents grow past the hard limit."""
    b.user(
        "The logs of those subagents show requests of up to 1.8 million tokens, and the "
        "model rejects anything over 1,000,000. Our estimate said they were under the "
        "400,000 budget. How do we count tokens?"
    )
    grep = b.new_call("grep", {"pattern": "def estimate_tokens", "path": "src"})
    b.call("", grep)
    b.result(grep, codebase.grep_estimate())
    read = b.new_call("read_file", {"path": "src/chronicle/budget.py"})
    b.call("", read)
    b.result(read, codebase.BUDGET_MODULE)
    test = b.new_call("run_tests", {"path": "tests/test_budget.py"})
    b.call("", test)
    chapter = chapter_text(1, chapter_chars)
    chars4, measured = len(chapter) // 4, REFERENCE.count(chapter)
    b.result(test, codebase.failing_budget_run(len(chapter), chars4, measured))
    script = ESTIMATORS["script"].count(chapter)
    b.answer(
        "We divide characters by four, a rule of thumb for English. Russian packs far "
        f"fewer characters into a token: chapter 1 has {len(chapter):,} characters, which "
        f"the estimate calls {chars4:,} tokens while the tokenizer counts {measured:,}. "
        "So a subagent that reads chapters believes it is at about half its real size "
        "and never trims in time. A per-script rule that errs on the high side:\n\n"
        f"```python\n{codebase.SCRIPT_RULE_SNIPPET}\n```\n\n"
        f"It says {script:,} for chapter 1. The tokenizer itself would be exact."
    )


def _recheck_turn(b: RunBuilder) -> None:
    """Turn 4: one task call; its result is the early-stop subagent's answer."""
    b.user(f"Run the check of chapters {span(chapter_range(1))} again with a fresh subagent.")
    call = b.new_call("task", task_arguments(chapter_range(1)))
    b.call("", call)
    b.result(call, early_stop_report())
    b.answer(
        "The subagent stopped after 2 of its 40 chapters, far below its 400,000-token "
        'budget, to "save space". It cannot know that the oldest tool results are '
        "cleared for it when the conversation grows, so it plans around a limit that no "
        'longer applies. I suggest adding to the subagent instructions: "When the '
        "conversation outgrows the model, the oldest tool results are cleared and the "
        "newest kept whole, so do not stop a long task to save space; if you need a "
        'cleared result, read the file again."'
    )


def main_runs(*, chapter_chars: int = 100_000, memo: CountMemo | None = None) -> tuple[Run, ...]:
    """The main agent's run (one run). `chapter_chars` sizes the chapter it measures."""
    b = RunBuilder("main", memo)
    b.system(SYSTEM_PROMPT)
    _fix_turn(b)
    _fan_out_turn(b)
    _estimate_turn(b, chapter_chars)
    _recheck_turn(b)
    return (b.run("Main agent: chronicle checks, 8 subagents and a re-check", MAIN_SESSION),)
