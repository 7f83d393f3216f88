"""SWE-agent trajectories: both history shapes, the reply only the trajectory kept,
errors that name the JSON path, detection, and the figures of the real files."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from contextsim.counting.builder import build
from contextsim.counting.estimators import ESTIMATORS
from contextsim.counting.skeleton import prefix_sums
from contextsim.ingest.base import FormatError, ParsedFile, Source, read_source
from contextsim.ingest.detect import IMPORTERS, parse_path, parse_stream
from contextsim.model import (
    TextPart,
    ToolCallPart,
    ToolResultPart,
    request_count,
    steps,
    user_turns,
)
from contextsim.systems.swe_agent.format import SWEAgentImporter
from tests.ingest.examples import Examples
from tests.systems.anthropic_api import test_format as test_anthropic
from tests.systems.claude_code import test_format as test_claude_code
from tests.systems.codex import test_format as test_codex
from tests.systems.inspect_ai import test_format as test_inspect
from tests.systems.native import test_format as test_native
from tests.systems.openai_api import test_format as test_openai

SWE = SWEAgentImporter()


EXAMPLES = Examples(SWE, "django__django-1.traj")
source, parse, error = EXAMPLES.source, EXAMPLES.parse, EXAMPLES.error


TASK = "We're solving this issue:\nISSUE:\nQuerySet.count() is slow\nDetails follow.\n"
TEXT_ACTION = {
    "environment": "swe_main",
    "history": [
        {"role": "system", "content": "You are a programmer.", "agent": "primary"},
        {"role": "user", "content": "Demonstration: ...", "is_demo": True, "agent": "primary"},
        {"role": "user", "content": TASK, "agent": "primary"},
        {
            "role": "assistant",
            "content": "Look first.\n\n```\nls -a\n```",
            "thought": "Look first.\n\n",
            "action": "ls -a\n",
            "agent": "primary",
        },
        {"role": "user", "content": "setup.py\n(Open file: n/a)", "agent": "primary"},
        {
            "role": "assistant",
            "content": "Done.\n\n```\nsubmit\n```",
            "thought": "Done.\n\n",
            "action": "submit\n",
            "agent": "primary",
        },
    ],
    "trajectory": [{"action": "ls -a\n"}, {"action": "submit\n"}],
    "info": {"model_stats": {"tokens_sent": 1234, "tokens_received": 56, "api_calls": 2}},
}


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def function_calling(**extra: Any) -> dict[str, Any]:
    history = [
        {"role": "system", "content": "sys", "agent": "main", "message_type": "system_prompt"},
        {"role": "user", "content": TASK, "agent": "main", "message_type": "observation"},
        {
            "role": "assistant",
            "content": "Find it.",
            "thought": "Find it.",
            "action": "find_file a.py",
            "tool_calls": [call("call_1", "find_file", '{"file_name":"a.py"}')],
            "agent": "main",
            "message_type": "action",
        },
        {
            "role": "tool",
            "content": "Found 1 match",
            "tool_call_ids": ["call_1"],
            "agent": "main",
            "message_type": "observation",
        },
    ]
    trajectory = [
        {"action": "find_file a.py", "thought": "Find it.", "response": "Find it."},
        {"action": "submit", "thought": "Submitting.", "response": "Submitting."},
    ]
    config = {
        "agent": {"model": {"name": "gpt-4o"}},
        "problem_statement": {"id": "repo-i1"},
    }
    return {"history": history, "trajectory": trajectory, "replay_config": config, **extra}


def test_text_actions_become_tool_calls_answered_by_the_next_user_message():
    parsed = parse(TEXT_ACTION)
    (run,) = parsed.runs
    assert parsed.format == run.format == "swe-agent"
    assert [m.role for m in run.messages] == [
        "system",
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert run.messages[3].parts == (
        TextPart("Look first.\n\n"),
        ToolCallPart("action-3", "ls", "ls -a\n"),
    )
    assert run.messages[4].parts == (ToolResultPart("action-3", "setup.py\n(Open file: n/a)"),)
    assert run.messages[4].kind == "tool_result"
    assert run.messages[5].tool_calls == (ToolCallPart("action-5", "submit", "submit\n"),)
    assert run.messages[4].source == "$.history[4]"


def test_the_demonstration_is_a_system_message_so_the_task_is_the_only_user_turn():
    (run,) = parse(TEXT_ACTION).runs
    assert run.messages[1].text == "Demonstration: ..."
    assert [(t.start, t.end) for t in user_turns(run)] == [(2, 6)]


def test_title_is_the_file_name_and_the_issue_line_and_no_request_has_usage():
    parsed = parse(TEXT_ACTION)
    (run,) = parsed.runs
    assert run.title == "django__django-1: QuerySet.count() is slow"
    assert run.session_id == "django__django-1"
    assert run.model == ""
    assert [s.usage for s in steps(run)] == [None, None]


def test_aggregate_model_stats_are_reported_in_a_warning_not_invented_per_request():
    parsed = parse(TEXT_ACTION)
    assert parsed.warnings == (
        "django__django-1.traj: $.info.model_stats: only totals were logged "
        "(1,234 tokens sent over 2 calls); no request has measured usage",
    )
    assert parse({**TEXT_ACTION, "info": {"exit_status": "submitted"}}).warnings == ()


def test_function_calling_keeps_tool_calls_model_and_instance_id():
    (run,) = parse(function_calling()).runs
    assert run.model == "gpt-4o"
    assert run.title == "repo-i1: QuerySet.count() is slow"
    assert run.session_id == "repo-i1"
    assert run.messages[2].parts == (
        TextPart("Find it."),
        ToolCallPart("call_1", "find_file", '{"file_name":"a.py"}'),
    )
    assert run.messages[3].role == "tool"
    assert run.messages[3].parts == (ToolResultPart("call_1", "Found 1 match"),)


def test_the_last_reply_only_the_trajectory_kept_is_added_as_the_final_request():
    (run,) = parse(function_calling()).runs
    assert len(run.messages) == 5
    assert run.messages[4].parts == (
        TextPart("Submitting."),
        ToolCallPart("trajectory-1", "submit", "submit"),
    )
    assert run.messages[4].source == "$.trajectory[1]"
    assert request_count(run) == len(steps(run)) == 2
    assert steps(run)[-1].response == 4


def test_no_reply_is_added_when_the_trajectory_has_no_extra_step():
    data = function_calling(trajectory=[{"action": "find_file a.py"}])
    (run,) = parse(data).runs
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "tool"]
    assert steps(run)[-1].response is None  # the request after the last result is pending


def test_replay_config_stored_as_json_text_is_read():
    data = function_calling()
    data["replay_config"] = json.dumps(data["replay_config"])
    (run,) = parse(data).runs
    assert run.model == "gpt-4o"


def test_a_tool_message_answering_two_calls_gives_the_text_to_the_first():
    data = function_calling()
    data["history"][3]["tool_call_ids"] = ["call_1", "call_2"]
    (run,) = parse(data).runs
    assert run.messages[3].parts == (
        ToolResultPart("call_1", "Found 1 match"),
        ToolResultPart("call_2", ""),
    )


def test_messages_of_several_agents_are_kept_in_one_run_with_a_warning():
    data = json.loads(json.dumps(TEXT_ACTION))
    data["history"][5]["agent"] = "reviewer"
    data.pop("info")
    parsed = parse(data)
    assert len(parsed.runs[0].messages) == 6
    assert parsed.warnings == (
        "django__django-1.traj: $.history: messages of 2 agents kept in one run: "
        "['primary', 'reviewer']",
    )


def test_an_assistant_message_without_action_is_plain_text_and_ends_no_round():
    data = json.loads(json.dumps(TEXT_ACTION))
    data["history"][3] = {"role": "assistant", "content": "Thinking aloud."}
    (run,) = parse(data).runs
    assert run.messages[3].parts == (TextPart("Thinking aloud."),)
    assert run.messages[4].role == "user" and run.messages[4].kind == "user"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "$: expected a trajectory object with 'history', found list"),
        ({"trajectory": []}, "$.history: expected a list of messages, found nothing"),
        ({"history": []}, "$.history: expected at least one message, found none"),
        ({"history": ["hi"]}, "$.history[0]: expected a message object, found str"),
        (
            {"history": [{"role": "robot", "content": "x"}]},
            "$.history[0].role: expected system, user, assistant or tool, found 'robot'",
        ),
        (
            {"history": [{"content": "x"}]},
            "$.history[0].role: expected system, user, assistant or tool, found nothing",
        ),
        (
            {"history": [{"role": "user", "content": 42}]},
            "$.history[0].content: expected a string, a list or null, found int",
        ),
        (
            {"history": [{"role": "assistant", "content": "x", "action": ["ls"]}]},
            "$.history[0].action: expected a command string, found list",
        ),
        (
            {"history": [{"role": "assistant", "content": "", "tool_calls": {"id": "c"}}]},
            "$.history[0].tool_calls: expected a list of tool calls, found dict",
        ),
        (
            {"history": [{"role": "tool", "content": "x", "tool_call_ids": "call_1"}]},
            "$.history[0].tool_call_ids: expected a list, found str",
        ),
        (
            {"history": [{"role": "user", "content": "x"}], "trajectory": {}},
            "$.trajectory: expected a list of steps, found dict",
        ),
        (
            {"history": [{"role": "user", "content": "x"}], "trajectory": ["step"]},
            "$.trajectory[0]: expected a step object, found str",
        ),
    ],
)
def test_malformed_trajectories_name_the_file_the_json_path_and_what_was_expected(data, message):
    assert error(data) == f"django__django-1.traj: {message}"


def test_json_lines_are_not_a_trajectory():
    lines = b'{"history": []}\n{"history": []}\n'
    with pytest.raises(FormatError) as err:
        SWE.parse(source(lines))
    assert str(err.value) == (
        "django__django-1.traj: line 1: expected one JSON document (a .traj file)"
    )


def dumps(data: Any) -> bytes:
    return json.dumps(data).encode()


def lines(*records: Any) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def handwritten_examples() -> dict[str, bytes]:
    """The hand-written examples of the other formats' tests, as files."""
    codex = (
        test_codex.record("session_meta", {"id": "s"}),
        test_codex.message("user", "hi"),
        test_codex.tokens(10),
    )
    return {
        "openai_messages.json": dumps(test_openai.CONVERSATION),
        "openai_pairs.json": dumps(test_openai.PAIRS),
        "openai_pairs.jsonl": lines(*test_openai.PAIRS),
        "inspect.json": dumps(test_inspect.inspect_log()),
        "anthropic_body.json": dumps(test_anthropic.BODY),
        "anthropic_pairs.jsonl": lines(*test_anthropic.PAIRS),
        "native.json": dumps(test_native.DOC),
        "claude_code.jsonl": lines(*test_claude_code.HELLO),
        "codex.jsonl": lines(*codex),
    }


def corpus_logs(corpus: Path, *folders: str) -> list[Path]:
    """The JSON, JSONL and .traj files of the corpus, in `folders` (all when none)."""
    found = sorted(p for p in corpus.rglob("*") if p.suffix in (".json", ".jsonl", ".traj"))
    return [p for p in found if not folders or p.parent.name in folders]


def read(path: Path) -> Source:
    with path.open("rb") as stream:
        return read_source(str(path), stream)


def test_both_history_shapes_are_detected_among_all_formats():
    for data in (TEXT_ACTION, function_calling()):
        assert parse_stream("a.traj", io.BytesIO(dumps(data))).format == "swe-agent"


def test_other_formats_hand_written_examples_are_not_claimed():
    for name, raw in handwritten_examples().items():
        src = read_source(name, io.BytesIO(raw))
        assert not SWE.sniff(src), name


def test_other_corpus_files_are_not_claimed_and_ours_are_claimed_by_no_other(corpus):
    others = [p for p in corpus_logs(corpus) if p.parent.name != "swe_agent"]
    assert len(others) >= 6
    for path in others:
        assert not SWE.sniff(read(path)), path
    for path in corpus_logs(corpus, "swe_agent"):
        claimed = [n for n, i in IMPORTERS.items() if i.sniff(read(path))]
        assert claimed == ["swe-agent"], path


# Real trajectories written by SWE-agent (see ../shared/corpus/SOURCES.md).

PYDICOM = "gpt4_pydicom__pydicom-1458.traj"
TEST_REPO = "gpt4_6e44b9__sweagenttestrepo-1c2844.traj"


def corpus_run(corpus: Path, name: str) -> tuple[ParsedFile, Any]:
    parsed = parse_path(corpus / "swe_agent" / name)
    assert parsed.format == "swe-agent"
    (run,) = parsed.runs
    return parsed, run


def test_text_action_trajectory_has_26_messages_12_requests_and_12_calls(corpus):
    parsed, run = corpus_run(corpus, PYDICOM)
    assert len(run.messages) == 26
    assert request_count(run) == len(steps(run)) == 12  # model_stats.api_calls
    calls = [c for m in run.messages for c in m.tool_calls]
    assert len(calls) == 12
    assert [c.name for c in calls[:4]] == ["create", "edit", "python", "find_file"]
    assert calls[-1] == ToolCallPart("action-25", "submit", "submit\n")
    assert sum(len(m.tool_results) for m in run.messages) == 11  # submit's output unsent
    assert [m.role for m in run.messages[:3]] == ["system", "system", "user"]
    assert len(user_turns(run)) == 1
    assert run.model == ""
    assert run.title.startswith("gpt4_pydicom__pydicom-1458: Pixel Representation attribute")
    assert all(s.usage is None for s in steps(run))
    assert "(122,612 tokens sent over 12 calls)" in parsed.warnings[0]


def test_text_action_replies_are_the_thought_followed_by_the_fenced_command(corpus):
    """Why splitting a reply into text and call loses nothing: every logged content is
    exactly thought + fence + action + fence."""
    raw = json.loads((corpus / "swe_agent" / PYDICOM).read_text())["history"]
    _, run = corpus_run(corpus, PYDICOM)
    for logged, message in zip(raw, run.messages, strict=True):
        if message.role == "assistant":
            (command,) = message.tool_calls
            assert logged["content"] == message.text + "```\n" + command.arguments + "```"


def test_function_calling_trajectory_has_5_requests_the_last_from_the_trajectory(corpus):
    parsed, run = corpus_run(corpus, TEST_REPO)
    assert len(run.messages) == 11  # 10 history messages and the final reply
    assert request_count(run) == len(steps(run)) == 5  # model_stats.api_calls
    names = [c.name for m in run.messages for c in m.tool_calls]
    assert names == ["find_file", "open", "edit", "bash", "submit"]
    assert sum(len(m.tool_results) for m in run.messages) == 4
    assert run.messages[2].tool_calls[0].id == "call_fJuazlMUN5fQDQ73G6XSpYpx"
    assert run.messages[3].tool_results[0].call_id == "call_fJuazlMUN5fQDQ73G6XSpYpx"
    assert run.messages[-1].source == "$.trajectory[4]"
    assert run.model == "gpt-4o"
    assert run.title == "SWE-agent__test-repo-i1: SyntaxError: invalid syntax"
    assert "(7,141 tokens sent over 5 calls)" in parsed.warnings[0]


@pytest.mark.parametrize(
    ("name", "estimator", "tokens_sent"),
    [(PYDICOM, "cl100k", 122_612), (TEST_REPO, "o200k", 7_141)],
)
def test_reconstructed_requests_add_up_to_tokens_sent(corpus, name, estimator, tokens_sent):
    """The sum of every request's history, counted with the model's own tokenizer
    (cl100k for GPT-4, o200k for gpt-4o), against model_stats.tokens_sent.

    Measured: pydicom 122,452 / 122,612 = 0.9987 (cl100k); test-repo 7,252 / 7,141 =
    1.0155 (o200k). The gap is framing: contextsim counts 4 tokens per message and a
    tool call as its name plus arguments, while the API frames messages and calls its
    own way. 2% covers both and still catches a lost or extra request (the smallest
    test-repo request is 15% of its total) or a dropped demonstration (47% of the
    pydicom total).
    """
    _, run = corpus_run(corpus, name)
    skeleton = build(run, ESTIMATORS[estimator])
    totals = prefix_sums(skeleton.tokens)
    sent = sum(totals[end] for end in skeleton.ends)
    assert abs(sent / tokens_sent - 1) < 0.02


def test_an_output_after_the_last_counted_call_was_never_sent(tmp_path):
    """info.model_stats.api_calls counts 1 call; the observation after it (written
    before the agent stopped) is no pending request."""
    data = {
        "history": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "ISSUE:\nfix it"},
            {"role": "assistant", "content": "Done.\n```\nsubmit\n```"},
            {"role": "user", "content": "diff --git a/x b/x"},
        ],
        "trajectory": [{"response": "Done.\n```\nsubmit\n```"}],
        "info": {"exit_status": "submitted", "model_stats": {"api_calls": 1, "tokens_sent": 50}},
    }
    path = tmp_path / "one.traj"
    path.write_text(json.dumps(data))
    (run,) = parse_path(str(path)).runs
    assert [m.role for m in run.messages] == ["system", "user", "assistant"]
    assert len(steps(run)) == 1
    data["info"]["model_stats"]["api_calls"] = 2  # a call was made that the log lacks
    path.write_text(json.dumps(data))
    (run,) = parse_path(str(path)).runs
    assert len(steps(run)) == 2
