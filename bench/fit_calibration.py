"""Fit the calibrated estimators: ``python bench/fit_calibration.py [--check]``.

Training text: bench/calibration/*.txt, written for this project (prose in 24 languages
and registers, chat with emoji, code and tool output); never the UDHR corpus the
estimators are evaluated on. Each file is split into paragraphs (blank-line separated),
each paragraph one sample: its features (contextsim.counting.calibrated.features)
and its token count by the real encoding.

Fit: non-negative least squares of tokens on features, each sample weighted by
1 / tokens (so the fit minimizes relative error, and a long paragraph counts as much as
a short one) times its language's weight: 1 for the languages the targets name
(English, code, Russian, Greek, Arabic, Hindi, Hungarian, Japanese, Korean, Chinese,
chat), SECONDARY for the others, which keep the rates sane for them without pulling the
named languages off. Solved by cyclic coordinate descent on the normal equations in
plain Python (about 30 features; no numpy needed).

Guard against under-estimation (the targets allow 15% over but only 10% under): the
coefficients are then scaled so that the median named-language training file is
estimated MARGIN over its real count, and further up if one would still be more than
FLOOR under. Everything is deterministic; the
result is written to contextsim/estimators/calibration.json (``--check`` only compares).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make `contextsim` importable
    sys.path.insert(0, str(ROOT))

import tiktoken  # noqa: E402

from contextsim.counting.calibrated import CONSTANTS, FEATURES, features  # noqa: E402
from contextsim.counting.offline_bpe import encoding  # noqa: E402

TEXTS = Path(__file__).resolve().parent / "calibration"
MODELS = {"o200k": "o200k_base", "cl100k": "cl100k_base"}
NAMED = ("en", "code", "chat", "ru", "el", "ar", "hi", "hu", "ja", "ko", "zh")
"""File name prefixes of the languages the targets name (weight 1)."""
SECONDARY = 0.1
"""Sample weight of the other languages."""
MARGIN = 0.02
"""The median error of the named-language training files after scaling: a little over,
because the targets forgive over-estimates more than under-estimates."""
FLOOR = -0.08
"""Most a named-language training file may be estimated under, after scaling."""
SWEEPS = 4000
"""Coordinate-descent sweeps (converged well before on these data)."""


def language(path: Path) -> str:
    """The language of a training file: its name up to the first digit, "_" or "."."""
    found = re.match(r"[a-z]+", path.name)
    return found.group() if found else path.stem


def samples() -> list[tuple[str, str]]:
    """(file name, paragraph) of every training paragraph, in file order."""
    out = []
    for path in sorted(TEXTS.glob("*.txt")):
        for paragraph in re.split(r"\n[ \t]*\n", path.read_text(encoding="utf-8")):
            if paragraph.strip():
                out.append((path.name, paragraph))
    return out


def nnls(rows: list[list[float]], ys: list[float], weights: list[float]) -> list[float]:
    """argmin over x >= 0 of sum_i weights[i] * (rows[i] . x - ys[i])^2, by cyclic
    coordinate descent on the normal equations (a tiny ridge keeps it well posed)."""
    n = len(rows[0])
    gram = [[0.0] * n for _ in range(n)]
    rhs = [0.0] * n
    for row, y, w in zip(rows, ys, weights, strict=True):
        for i, vi in enumerate(row):
            if vi:
                rhs[i] += w * vi * y
                for j, vj in enumerate(row):
                    gram[i][j] += w * vi * vj
    for i in range(n):
        gram[i][i] = gram[i][i] * (1 + 1e-9) + 1e-12
    x = [0.0] * n
    for _ in range(SWEEPS):
        for i in range(n):
            rest = sum(gram[i][j] * x[j] for j in range(n) if j != i)
            x[i] = max(0.0, (rhs[i] - rest) / gram[i][i])
    return x


def predict(coefficients: dict[str, float], found: dict[str, int]) -> float:
    return sum(coefficients[name] * found[name] for name in coefficients)


def fit(model: str, data: list[Sample]) -> dict[str, object]:
    """The constants of one model, with its training errors per file."""
    enc = encoding(MODELS[model])
    names = list(FEATURES)
    rows, ys, weights = [], [], []
    for file, paragraph, found in data:
        tokens = len(enc.encode_ordinary(paragraph))
        rows.append([float(found[name]) for name in names])
        ys.append(float(tokens))
        weights.append((1.0 if language(Path(file)) in NAMED else SECONDARY) / max(tokens, 1))
    solution = nnls(rows, ys, weights)
    coefficients = dict(zip(names, solution, strict=True))
    errors = file_errors(coefficients, enc, data)
    named = sorted(e for file, e in errors.items() if language(Path(file)) in NAMED)
    centre = (1 + MARGIN) / (1 + statistics.median(named))
    scale = max(centre, (1 + FLOOR) / (1 + named[0]))
    coefficients = {name: round(c * scale, 6) for name, c in coefficients.items()}
    return {
        "encoding": MODELS[model],
        "coefficients": coefficients,
        "scale": round(scale, 6),
        "training_errors": {f: round(e * scale + scale - 1, 4) for f, e in errors.items()},
    }


Sample = tuple[str, str, dict[str, int]]
"""(training file name, paragraph, its features)."""


def file_errors(
    coefficients: dict[str, float], enc: tiktoken.Encoding, data: list[Sample]
) -> dict[str, float]:
    """Signed relative error of the model on each whole training file."""
    by_file: dict[str, list[str]] = {}
    for file, paragraph, _ in data:
        by_file.setdefault(file, []).append(paragraph)
    out = {}
    for file, paragraphs in by_file.items():
        text = "\n\n".join(paragraphs)
        real = len(enc.encode_ordinary(text))
        out[file] = predict(coefficients, features(text)) / real - 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    data = [(file, paragraph, features(paragraph)) for file, paragraph in samples()]
    result = {
        "fitted_by": "bench/fit_calibration.py",
        "samples": len(data),
        "models": {model: fit(model, data) for model in MODELS},
    }
    text = json.dumps(result, indent=1) + "\n"
    for model, entry in result["models"].items():  # type: ignore[union-attr]
        worst = sorted(entry["training_errors"].items(), key=lambda kv: kv[1])
        print(f"{model}: scale {entry['scale']}, training files from {worst[0]} to {worst[-1]}")
    if args.check:
        same = CONSTANTS.exists() and CONSTANTS.read_text() == text
        print("constants are up to date" if same else f"{CONSTANTS} differs from a fresh fit")
        return 0 if same else 1
    CONSTANTS.write_text(text)
    print(f"wrote {CONSTANTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
