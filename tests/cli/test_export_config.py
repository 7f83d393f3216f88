"""`python -m contextsim export-config`: a policy as the real system's configuration."""

from __future__ import annotations

import json

import pytest

from contextsim import registry as exports
from contextsim.cli.main import main
from contextsim.systems.exporting import ExportContext, Snippet


def two_targets(ctx: ExportContext) -> tuple[Snippet, ...]:
    batch = ctx.params.batch
    return (
        Snippet(
            "api", "The API request", "json", json.dumps({"batch": batch, "window": ctx.hard_limit})
        ),
        Snippet("cli", "The CLI's config", "toml", f"batch = {batch}\n", ("the CLI rounds it",)),
    )


@pytest.fixture(autouse=True)
def exported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(exports.EXPORTERS.loaded(), "mythex", two_targets)


def test_json_gives_every_target_with_the_chosen_parameters(capsys):
    assert (
        main(
            [
                "export-config",
                "--policy",
                "mythex",
                "--set",
                "batch=7",
                "--hard-limit",
                "90000",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert [s["target"] for s in out["snippets"]] == ["api", "cli"]
    assert json.loads(out["snippets"][0]["text"]) == {"batch": 7, "window": 90000}
    assert out["snippets"][1]["notes"] == ["the CLI rounds it"]


def test_one_target_prints_only_its_text_and_the_notes_to_stderr(capsys):
    assert main(["export-config", "--policy", "mythex", "--target", "cli"]) == 0
    printed = capsys.readouterr()
    assert printed.out == "batch = 4\n"
    assert "note: the CLI rounds it" in printed.err


def test_the_window_defaults_to_the_models(capsys):
    assert (
        main(["export-config", "--policy", "mythex", "--target", "api", "--model", "gpt-4o"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["window"] == 128_000


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--policy", "turns"], "no real counterpart"),
        (["--policy", "nope"], "unknown policy 'nope'"),
        (["--policy", "mythex", "--set", "colour=red"], "no parameter colour"),
        (["--policy", "mythex", "--set", "batch=many"], "batch"),
        (["--policy", "mythex", "--target", "yaml"], "no target 'yaml'; expected one of api, cli"),
    ],
)
def test_bad_requests_say_what_was_wrong_and_exit_2(args, said, capsys):
    assert main(["export-config", *args]) == 2
    assert said in capsys.readouterr().err
