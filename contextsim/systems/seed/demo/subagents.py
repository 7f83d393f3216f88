"""The seed's subagent incidents: 8 subagents that outgrow the model, and one that stops.

Each subagent gets a system prompt and one user message (its task, with the editor's
notes on its chapters attached), then reads its 40 chapters one tool round at a time
(`read_file` call, chapter text as result) and ends with a plain answer.

Sizes at the default 100,000 characters per chapter (o200k tokens): a chapter is about
44,600; system prompt and task with notes about 10,000; so the request before the final
answer carries about 1.79 million, past the 1,000,000 hard limit from chapter 23 on.
The early-stop subagent reads 2 chapters and stops at about 99,000.
"""

from __future__ import annotations

import random

from contextsim.counting.estimators import CountMemo
from contextsim.model import Run
from contextsim.systems.seed.demo.build import RunBuilder, tool_message, warm_counts
from contextsim.systems.seed.demo.text import chapter_note, chapter_text

SUBAGENTS = 8
CHAPTERS_PER_SUBAGENT = 40
EARLY_STOP_AFTER = 2
MAIN_SESSION = "demo-main"
EARLY_STOP_SESSION = "demo-early-stop"
EN_DASH = "\u2013"

SYSTEM_PROMPT = (
    "You are a subagent of a writing assistant that works on a book project. You get "
    "one task, carry it out alone with your tools, and reply once, when it is done; that "
    "reply is all the agent that started you will see.\n\n"
    "Tools:\n"
    "- read_file(path): the full text of a file of the project.\n\n"
    "Read every file your task names; do not guess at a file you have not read. Write "
    "your reply in English and quote Russian text exactly as it appears."
)


def chapter_range(index: int) -> range:
    """The chapters subagent `index` (1-based) reads: 1-40, 41-80, ..., 281-320."""
    first = (index - 1) * CHAPTERS_PER_SUBAGENT + 1
    return range(first, first + CHAPTERS_PER_SUBAGENT)


def chapter_path(number: int) -> str:
    return f"book/chapters/{number:03d}.md"


def subagent_session(index: int) -> str:
    return f"demo-subagent-{index}"


def span(chapters: range) -> str:
    """``81-120`` with an en dash, as titles and texts name a range of chapters."""
    return f"{chapters[0]}{EN_DASH}{chapters[-1]}"


def task_arguments(chapters: range) -> dict[str, object]:
    """The arguments of the main agent's `task` call that starts a subagent on
    `chapters`; the task tool sends `prompt` with the `attach`ed notes appended."""
    return {
        "description": f"Check chapters {span(chapters)}",
        "prompt": (
            f"Check chapters {span(chapters)} of the chronicle against the editor's notes "
            f"below. Read each chapter with read_file ({chapter_path(chapters[0])} to "
            f"{chapter_path(chapters[-1])}), one at a time, and compare its names, years "
            f"and distances with its note. When you have read all {len(chapters)} "
            "chapters, reply once with every chapter that differs from its note."
        ),
        "attach": f"notes/chapters.md#{chapters[0]}-{chapters[-1]}",
    }


def instruction(chapters: range) -> str:
    """The subagent's single user message: the task prompt and its notes."""
    notes = "\n\n".join(chapter_note(n) for n in chapters)
    prompt = task_arguments(chapters)["prompt"]
    return f"{prompt}\n\nEditor's notes (notes/chapters.md, chapters {span(chapters)}):\n\n{notes}"


def finding(number: int) -> str | None:
    """Where chapter `number` differs from its note, or None (about 1 chapter in 5)."""
    rng = random.Random(f"finding-{number}")
    if rng.random() >= 0.2:
        return None
    year = rng.randrange(1850, 1920)
    return rng.choice(
        (
            f"the note dates the fire to {year}, the chapter to {year + 1}",
            f"the note gives {rng.randrange(5, 20)} versts to the mill, the chapter "
            f"{rng.randrange(20, 40)}",
            "a clerk's surname is spelt differently in the note and in the chapter",
        )
    )


def report(index: int) -> str:
    """Subagent `index`'s final answer (also the main run's result for its task)."""
    chapters = chapter_range(index)
    found = [(n, f) for n in chapters if (f := finding(n)) is not None]
    lines = [f"- Chapter {n}: {f}." for n, f in found]
    return "\n".join(
        [
            f"Checked all {len(chapters)} chapters ({span(chapters)}) against the editor's "
            f"notes. {len(found)} differ from their notes:",
            *lines,
            "The other chapters match their notes.",
        ]
    )


def early_stop_report() -> str:
    """The early-stop subagent's last words: it stops to save space."""
    found = [f"in chapter {n} {f}" for n in (1, 2) if (f := finding(n)) is not None]
    verdict = "; ".join(found) if found else "both match their notes"
    return (
        f"I have read chapters 1 and 2 of 40 and compared them with the notes: {verdict}. "
        "These chapters are very long and my context is nearly full, so I am stopping "
        "here to save space rather than risk running out of room. Chapters "
        f"{span(range(3, CHAPTERS_PER_SUBAGENT + 1))} are not checked yet; please start "
        "another subagent for them."
    )


def _progress(number: int, first: int) -> str:
    # A short note before each call, as models write between tool calls.
    if number == first:
        return f"I'll read the chapters in order, starting with chapter {number}."
    previous = finding(number - 1)
    verdict = f"differs: {previous}" if previous else "matches its note"
    return f"Chapter {number - 1} {verdict}. Next, chapter {number}."


def _reading_run(
    tag: str, chapters: range, read: int, chapter_chars: int, memo: CountMemo | None
) -> RunBuilder:
    """A subagent told to check `chapters` that reads the first `read` of them."""
    builder = RunBuilder(tag, memo)
    builder.system(SYSTEM_PROMPT)
    builder.user(instruction(chapters))
    numbers = chapters[:read]
    calls = [builder.new_call("read_file", {"path": chapter_path(n)}) for n in numbers]
    texts = [chapter_text(n, chapter_chars) for n in numbers]
    warm_counts([tool_message(c, t) for c, t in zip(calls, texts, strict=True)], builder.memo)
    for number, call, text in zip(numbers, calls, texts, strict=True):
        builder.call(_progress(number, chapters[0]), call)
        builder.result(call, text)
    return builder


def subagent_run(index: int, *, chapter_chars: int = 100_000, memo: CountMemo | None = None) -> Run:
    """Subagent `index` of 8: reads all 40 of its chapters, then reports."""
    chapters = chapter_range(index)
    builder = _reading_run(f"s{index}", chapters, len(chapters), chapter_chars, memo)
    builder.answer(report(index))
    title = f"Subagent {index}/{SUBAGENTS}: read chapters {span(chapters)}"
    return builder.run(title, subagent_session(index), parent=MAIN_SESSION)


def subagent_runs(
    *, chapter_chars: int = 100_000, memo: CountMemo | None = None
) -> tuple[Run, ...]:
    """The 8 subagents of the incident, in order."""
    return tuple(
        subagent_run(i, chapter_chars=chapter_chars, memo=memo) for i in range(1, SUBAGENTS + 1)
    )


def early_stop_runs(
    *, chapter_chars: int = 100_000, memo: CountMemo | None = None
) -> tuple[Run, ...]:
    """The re-check subagent on chapters 1-40 that stops after 2 to "save space"."""
    chapters = chapter_range(1)
    builder = _reading_run("early", chapters, EARLY_STOP_AFTER, chapter_chars, memo)
    builder.answer(early_stop_report())
    title = f"Re-check subagent: chapters {span(chapters)}, stopped after {EARLY_STOP_AFTER}"
    return (builder.run(title, EARLY_STOP_SESSION, parent=MAIN_SESSION),)
