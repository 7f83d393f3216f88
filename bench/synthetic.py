"""Deterministic long runs and mixed-script text for the benchmarks.

Everything here is a function of its arguments and a seeded ``random.Random``: no wall
clock, no global random state, so a benchmark measures the same input on every machine.

A long run (`long_run`) is shaped like a coding agent's session: a system prompt first,
a new user turn every ~150 requests, each request an assistant message with one tool call
(sometimes 2-4 in parallel) answered by one tool message per call, and a plain answer at
the end of every user turn. Tool results are mostly small; some are 5k-60k-token file
reads and a few are huge. Text is cut from one seeded block of words built per run, so
making a 10,000-step run costs slicing, not a per-word loop per message.

Sizes are given in ``chars4`` tokens (characters / 4).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from contextsim.model import Message, Part, Run, TextPart, ToolCallPart, ToolResultPart
from contextsim.systems.seed.demo.text import paragraph

CHARS_PER_TOKEN = 4

SMALL_TOKENS = (20, 2_000)
"""Range of a small tool result (grep, ls, a command's output, an edit's diff)."""
READ_TOKENS = (5_000, 60_000)
"""Range of a file read."""
HUGE_TOKENS = (100_000, 250_000)
"""Range of a huge result (a whole log, a generated file)."""

SMALL_TOOLS = ("grep", "bash", "list_dir", "edit_file", "run_tests")


def _split(text: str) -> tuple[str, ...]:
    """The space-separated words of `text` (a word list reads better as one string)."""
    return tuple(text.split())


_WORDS = _split(
    "def return self import from class for while if else elif try except raise with "
    "yield lambda None True False async await print len range dict list tuple set "
    "value result error config path file line token count budget message request step "
    "policy window context cache prefix batch index offset parse build check update "
    "user assistant tool call output input total limit score state model params "
    "the of and to in is that it for on as with by this be are from at or an which "
    "// { } ( ) [ ] = == != <= >= + - * / -> : ; , . # 0 1 2 3 42 100 0x1f"
)
"""Word pool of the generated text: code-ish English, all ASCII."""

_CHINESE = (
    "上下文窗口的大小决定了模型一次能读多少内容当对话变长时系统需要清除旧的工具结果"
    "或者只保留最近的几轮对话我们用这个基准测试来检查模拟是否足够快每一步都要计算"
)
_EMOJI = "😀🚀✅❌🔥📄🧪⚠️💡🎯📦🔧"
_CODE = (
    "for (let i = 0; i < items.length; i++) { total += items[i].tokens; }",
    "if budget - used < 0:\n    raise OverBudget(f'{used} > {budget}')",
    "SELECT id, tokens FROM messages WHERE run_id = ? ORDER BY idx;",
    "fn count(text: &str) -> usize { text.chars().count() / 4 }",
)


@dataclass(frozen=True, slots=True)
class Spec:
    """The shape of a generated run. `steps` is the number of requests (assistant
    messages); shares are per tool result, except `parallel_share` (per tool-calling
    step) and `huge_share` (huge results = max(1, round(steps x share)), none when 0)."""

    steps: int
    seed: int = 7
    turn_every: int = 150
    """Mean requests per user turn (each turn lasts 100-200 requests when 150)."""
    parallel_share: float = 0.12
    read_share: float = 0.03
    huge_share: float = 0.002
    error_share: float = 0.02
    system_tokens: int = 3_000
    small_tokens: tuple[int, int] = SMALL_TOKENS


def _block(rng: random.Random, chars: int) -> str:
    """`chars` characters or more of pool words in lines of 8-16 words."""
    lines: list[str] = []
    total = 0
    while total < chars:
        line = " ".join(rng.choices(_WORDS, k=rng.randint(8, 16)))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


class _Text:
    """Slices of one seeded block, so each message's text is one cheap slice."""

    def __init__(self, rng: random.Random, chars: int) -> None:
        self.rng = rng
        self.block = _block(rng, chars)

    def tokens(self, n: int) -> str:
        """About `n` chars4 tokens of text starting at a random offset of the block."""
        size = min(max(n * CHARS_PER_TOKEN, 1), len(self.block))
        start = self.rng.randrange(0, len(self.block) - size + 1)
        return self.block[start : start + size]


def _turn_lengths(rng: random.Random, spec: Spec) -> list[int]:
    """Requests per user turn, summing to spec.steps (the last turn takes the rest)."""
    low, high = max(spec.turn_every * 2 // 3, 1), max(spec.turn_every * 4 // 3, 1)
    lengths: list[int] = []
    left = spec.steps
    while left > 0:
        n = min(rng.randint(low, high), left)
        lengths.append(n)
        left -= n
    return lengths


def _result_tokens(rng: random.Random, spec: Spec, huge: bool) -> tuple[str, int]:
    """(tool name, result size in tokens) of one result."""
    if huge:
        return "read_file", rng.randint(*HUGE_TOKENS)
    if rng.random() < spec.read_share:
        return "read_file", rng.randint(*READ_TOKENS)
    # Mostly small: sizes skewed towards the low end.
    low, high = spec.small_tokens
    return rng.choice(SMALL_TOOLS), int(low + (high - low) * rng.random() ** 3)


def generate(spec: Spec) -> Run:
    """A run of exactly `spec.steps` requests, the same for the same spec."""
    if spec.steps < 1:
        raise ValueError("a run needs at least one step")
    rng = random.Random(spec.seed)
    largest = HUGE_TOKENS[1] if spec.huge_share else READ_TOKENS[1] if spec.read_share else 0
    most = max(largest, spec.small_tokens[1], spec.system_tokens)
    text = _Text(rng, most * CHARS_PER_TOKEN + 4_096)
    lengths = _turn_lengths(rng, spec)
    huge_steps = _huge_steps(rng, spec, lengths)
    messages: list[Message] = [Message("system", (TextPart(text.tokens(spec.system_tokens)),))]
    calls = 0
    step = 0
    for turn, length in enumerate(lengths):
        messages.append(Message("user", (TextPart(f"Turn {turn + 1}: {text.tokens(60)}"),)))
        for i in range(length):
            lead = (TextPart(text.tokens(rng.randint(10, 80))),)
            if i == length - 1:
                messages.append(Message("assistant", lead))
                step += 1
                continue
            width = rng.randint(2, 4) if rng.random() < spec.parallel_share else 1
            parts: list[Part] = list(lead)
            results: list[Message] = []
            for j in range(width):
                calls += 1
                name, size = _result_tokens(rng, spec, huge=j == 0 and step in huge_steps)
                call_id = f"call_{spec.seed}_{calls}"
                args = json.dumps({"path": f"src/pkg{calls % 37}/mod_{calls}.py"})
                parts.append(ToolCallPart(call_id, name, args))
                error = rng.random() < spec.error_share
                body = ToolResultPart(call_id, text.tokens(size), is_error=error)
                results.append(Message("tool", (body,)))
            messages.append(Message("assistant", tuple(parts)))
            messages.extend(results)
            step += 1
    return Run(
        title=f"synthetic {spec.steps} steps (seed {spec.seed})",
        messages=tuple(messages),
        format="synthetic",
        model="synthetic",
        session_id=f"synthetic-{spec.steps}-{spec.seed}",
    )


def _huge_steps(rng: random.Random, spec: Spec, lengths: list[int]) -> set[int]:
    """The steps whose first result is huge: max(1, steps x huge_share) of the
    tool-calling steps (every step but the answer ending each turn)."""
    calling: list[int] = []
    first = 0
    for n in lengths:
        calling.extend(range(first, first + n - 1))
        first += n
    if not spec.huge_share:
        return set()
    count = min(max(1, round(spec.steps * spec.huge_share)), len(calling))
    return set(rng.sample(calling, count))


def long_run(steps: int, seed: int = 7) -> Run:
    """A run of `steps` requests with the default shape (see Spec)."""
    return generate(Spec(steps, seed))


def mixed_script_text(chars: int, seed: int = 7) -> str:
    """About `chars` characters mixing English, Russian, Chinese, code and emoji by
    paragraph (and emoji inside paragraphs), for estimator benchmarks."""
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    while total < chars:
        kind = rng.randrange(5)
        if kind == 0:
            piece = " ".join(rng.choices(_WORDS, k=rng.randint(40, 120)))
        elif kind == 1:
            piece = paragraph(rng, rng.randint(3, 8))
        elif kind == 2:
            start = rng.randrange(len(_CHINESE) - 20)
            piece = (_CHINESE[start:] + _CHINESE[:start]) * rng.randint(1, 3)
        elif kind == 3:
            piece = "\n".join(rng.choices(_CODE, k=rng.randint(3, 10)))
        else:
            emoji = rng.choices(_EMOJI, k=rng.randint(2, 8))
            piece = " ".join(
                f"{w} {e}" for w, e in zip(rng.choices(_WORDS, k=8), emoji, strict=False)
            )
        out.append(piece)
        total += len(piece) + 2
    return "\n\n".join(out)
