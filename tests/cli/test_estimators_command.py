"""`python -m contextsim estimators`: the JSON contract over text files and run logs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from contextsim.counting.estimators import ESTIMATORS
from tests.conftest import ROOT


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextsim", "estimators", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


def test_json_per_file_per_script_with_every_estimator(tmp_path: Path):
    text = tmp_path / "mixed.txt"
    sample = "Hello world. Привет, мир! 你好\uff0c世界\u3002 Ελληνικά 🙂\n"
    text.write_text(sample * 50, encoding="utf-8")
    result = cli(str(text), "--reference", "cl100k", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["reference"] == "cl100k"
    (entry,) = report["files"]
    assert entry["path"] == str(text)
    keys = {"chars", "reference", *ESTIMATORS}
    assert set(entry["total"]) == keys
    assert all(set(row) == keys for row in entry["scripts"].values())
    assert {"cyrillic", "han", "greek", "emoji"} <= set(entry["scripts"])
    assert sum(r["reference"] for r in entry["scripts"].values()) == entry["total"]["reference"]
    assert sum(r["chars"] for r in entry["scripts"].values()) == entry["total"]["chars"]


def test_a_run_log_is_read_as_its_messages_text(tmp_path: Path):
    log = tmp_path / "run.json"
    log.write_text(
        json.dumps(
            {
                "contextsim": 1,
                "runs": [
                    {"title": "t", "messages": [{"role": "user", "content": "Привет " * 100}]}
                ],
            }
        )
    )
    (entry,) = json.loads(cli(str(log), "--json").stdout)["files"]
    assert entry["total"]["chars"] == len("Привет " * 100)


def test_readable_output_shows_signed_errors(corpus: Path):
    out = cli(str(corpus / "multilingual" / "udhr_ru_rus.txt")).stdout
    assert "cyrillic" in out and "%" in out


def test_bad_input_exits_2_with_the_reason(tmp_path: Path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"caf\xe9 au lait")
    result = cli(str(bad))
    assert result.returncode == 2 and "not valid UTF-8" in result.stderr
