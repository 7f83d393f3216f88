"""SWE-agent trajectories (``<instance id>.traj``): one JSON document per task.

The document holds ``history`` (every message the agent sent the model, in order),
``trajectory`` (one entry per step: response, thought, action, observation), ``info``
(exit status, submission, aggregate ``model_stats``) and, in newer files,
``replay_config`` (the run's configuration, with the model name and the instance id).

How the run is built:

- Messages come from ``history`` only: it is what the model was sent. A demonstration
  (a user message with ``is_demo``) becomes ``system``: it is instructions, not a user
  turn. Every assistant message is one model call.
- Function calling (``tool_calls`` in the OpenAI shape) gives tool calls, and ``tool``
  messages answer them through ``tool_call_ids``.
- In the older text-action files the reply is free text ending in a fenced command
  (``content`` is ``thought`` followed by the ``action`` in a fence). It becomes the
  thought as text plus one tool call whose name is the command's first word and whose
  arguments are the command; the user message right after it (the command's output)
  becomes that call's result. So observations are tool results in both shapes.
  Position decides, not ``message_type``: the task message is marked ``observation`` too.
- The history is written before each call's response is added, so a run that stops
  after its last call lacks that response; when ``trajectory`` has exactly one step
  more than the history has replies, that step's response is added as the last reply.
- Newer files keep each step's exact input (``query``; ``messages`` in some older
  ones). Lined up with the history (formats.sent_requests), it shows which
  observations the agent's history processors sent shortened ("Old environment output:
  (40 lines omitted)") and from which request on: the run's elisions, which
  ``as_logged`` replays. The history itself stays whole, for what-ifs.
- SWE-agent logs no per-request usage, only totals (``info.model_stats``): no message
  gets usage, and the totals are reported in a warning. When the totals count as many
  calls as the run has replies, the output after the last reply was never sent: it is
  left out, so the run has no pending request.
"""

from __future__ import annotations

import json
from typing import Any

from contextsim.ingest.base import (
    Document,
    FormatError,
    ParsedFile,
    Source,
    expect,
    text_of,
    without_unsent_tail,
)
from contextsim.ingest.exchanges import TITLE_CHARS
from contextsim.ingest.sent_requests import SentRequest, elisions_of
from contextsim.model import (
    Elision,
    Message,
    Part,
    Run,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from contextsim.systems.openai_api.format import OpenAIImporter

ROLES = ("system", "user", "assistant", "tool")
ROLES_EXPECTED = "system, user, assistant or tool"


class SWEAgentImporter:
    """SWE-agent ``.traj`` files (see the module docstring)."""

    name = "swe-agent"
    label = "SWE-agent trajectory (.traj)"

    def sniff(self, source: Source) -> bool:
        """True for one JSON object with a ``history`` list and a ``trajectory`` list;
        no other supported format has both keys."""
        if not isinstance(source, Document) or not isinstance(source.data, dict):
            return False
        data = source.data
        return isinstance(data.get("history"), list) and isinstance(data.get("trajectory"), list)

    def parse(self, source: Source) -> ParsedFile:
        """One run per file. Raises FormatError naming the JSON path of a wrong value."""
        path = source.path
        if not isinstance(source, Document):
            raise FormatError(path, "line 1", "expected one JSON document (a .traj file)")
        data = expect(path, "$", source.data, dict, "a trajectory object with 'history'")
        history = expect(path, "$.history", data.get("history"), list, "a list of messages")
        if not history:
            raise FormatError(path, "$.history", "expected at least one message, found none")
        messages = _history(path, history)
        steps = data.get("trajectory")
        if steps is not None:
            expect(path, "$.trajectory", steps, list, "a list of steps")
            messages.extend(_last_reply(path, messages, steps))
        if _calls(data.get("info")) == sum(m.role == "assistant" for m in messages):
            messages = without_unsent_tail(messages)  # every call is here: none pending
        config = _config(data.get("replay_config"))
        instance = _instance_id(config) or _stem(path)
        elisions, sent_warnings = _elisions(path, history, steps or [], len(messages))
        run = Run(
            _title(instance, messages),
            tuple(messages),
            self.name,
            _model(config),
            session_id=instance,
            elisions=elisions,
        )
        warnings = [
            *_agents_warning(path, history),
            *_totals_warning(path, data.get("info")),
            *sent_warnings,
        ]
        return ParsedFile(self.name, (run,), tuple(warnings))


def _history(path: str, history: list[Any]) -> list[Message]:
    """The history's messages; a text action's output becomes its call's result."""
    messages: list[Message] = []
    pending = ""  # the id of a text-action call waiting for its output
    for i, data in enumerate(history):
        where = f"$.history[{i}]"
        expect(path, where, data, dict, "a message object")
        role = data.get("role")
        if role not in ROLES:
            found = "nothing" if role is None else repr(role)
            raise FormatError(path, f"{where}.role", f"expected {ROLES_EXPECTED}, found {found}")
        _check_content(path, where, data)
        if role == "tool":
            messages.append(_tool_message(path, where, data))
        elif role == "user" and pending and not data.get("is_demo"):
            result = ToolResultPart(pending, text_of(data.get("content")))
            messages.append(Message("user", (result,), source=where))
        elif role == "assistant":
            message = _reply(path, where, data, f"action-{i}")
            messages.append(message)
            text_action = data.get("tool_calls") is None and message.tool_calls
            pending = message.tool_calls[0].id if text_action else ""
            continue
        else:
            body = {"role": "system" if data.get("is_demo") else role, "content": _content(data)}
            messages.append(OpenAIImporter().message(path, where, body))
        pending = ""
    return messages


def _check_content(path: str, where: str, data: dict[str, Any]) -> None:
    content = data.get("content")
    if content is not None and not isinstance(content, str | list):
        expect(path, f"{where}.content", content, (str, list), "a string, a list or null")


def _content(data: dict[str, Any]) -> Any:
    return data.get("content") if data.get("content") is not None else ""


def _tool_message(path: str, where: str, data: dict[str, Any]) -> Message:
    """A function-calling observation: the text answers the first id (SWE-agent runs one
    call per reply); any further ids get an empty result so that no call looks unanswered."""
    ids = data.get("tool_call_ids")
    ids = [] if ids is None else expect(path, f"{where}.tool_call_ids", ids, list, "a list")
    for j, call_id in enumerate(ids):
        expect(path, f"{where}.tool_call_ids[{j}]", call_id, str, "a tool call id string")
    text = text_of(data.get("content"))
    parts = [ToolResultPart(c, text if j == 0 else "") for j, c in enumerate(ids or [""])]
    return Message("tool", tuple(parts), source=where)


def _reply(path: str, where: str, data: dict[str, Any], call_id: str) -> Message:
    """An assistant message: function calling when it has ``tool_calls``, else a text
    action when it has a non-empty ``action``, else plain text."""
    if data.get("tool_calls") is not None:
        body = {"role": "assistant", "content": _content(data), "tool_calls": data["tool_calls"]}
        return OpenAIImporter().message(path, where, body)
    action = data.get("action")
    if action is not None:
        expect(path, f"{where}.action", action, str, "a command string")
    thought = data.get("thought")
    if thought is not None:
        expect(path, f"{where}.thought", thought, str, "a string")
    if not (action and action.strip()):
        body = {"role": "assistant", "content": _content(data)}
        return OpenAIImporter().message(path, where, body)
    return Message("assistant", _action_parts(thought, call_id, action), source=where)


def _action_parts(thought: str | None, call_id: str, action: str) -> tuple[Part, ...]:
    """The thought as text and the command as a call named by its first word."""
    call = ToolCallPart(call_id, action.split()[0], action)
    return (TextPart(thought), call) if thought else (call,)


def _last_reply(path: str, messages: list[Message], steps: list[Any]) -> list[Message]:
    """The response to the history's last request when only ``trajectory`` kept it."""
    replies = sum(1 for m in messages if m.role == "assistant")
    if len(steps) != replies + 1 or messages[-1].role == "assistant":
        return []
    where = f"$.trajectory[{replies}]"
    step = expect(path, where, steps[-1], dict, "a step object")
    action = step.get("action")
    thought = step.get("thought") if step.get("thought") is not None else step.get("response")
    action = expect(path, f"{where}.action", action if action is not None else "", str, "a string")
    thought = expect(path, f"{where}.thought", thought or "", str, "a string")
    if not action.strip():
        parts: tuple[Part, ...] = (TextPart(thought),) if thought else ()
    else:
        parts = _action_parts(thought, f"trajectory-{replies}", action)
    return [Message("assistant", parts, source=where)]


def _elisions(
    path: str, history: list[Any], steps: list[Any], kept: int
) -> tuple[tuple[Elision, ...], list[str]]:
    """What each step's ``query`` (``messages`` in older files: the exact input of
    that step) shows the agent sent shortened. Step k is the request answered by the
    history's k-th reply, or by the reply only the trajectory kept; a step whose
    ``response`` is not that reply means the steps do not line up with the history, and
    no step is used."""
    ends = [i for i, m in enumerate(history) if m.get("role") == "assistant"]
    if len(steps) == len(ends) + 1:
        ends.append(len(history))
    requests = []
    for k, (step, end) in enumerate(zip(steps, ends, strict=False)):
        sent = step.get("query", step.get("messages")) if isinstance(step, dict) else None
        if not isinstance(sent, list) or end > kept:
            continue
        where = f"$.trajectory[{k}]"
        reply = history[end] if end < len(history) else None
        if reply is not None and step.get("response") not in (None, reply.get("content")):
            problem = "response is not the history's reply to this request"
            return (), [f"{path}: {where}.response: {problem}; steps are replayed from the history"]
        pairs = [_role_text(path, f"{where}.query[{i}]", m) for i, m in enumerate(sent)]
        requests.append(SentRequest(k, end, pairs, f"{path}: {where}.query"))
    history_pairs = [(str(m.get("role")), text_of(m.get("content"))) for m in history]
    return elisions_of(history_pairs, requests)


def _role_text(path: str, where: str, data: Any) -> tuple[str, str]:
    expect(path, where, data, dict, "a message object")
    _check_content(path, where, data)
    return str(data.get("role")), text_of(data.get("content"))


def _config(value: Any) -> dict[str, Any]:
    """``replay_config`` as an object (some files store it as JSON text); {} if absent."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {}
    return value if isinstance(value, dict) else {}


def _dig(data: dict[str, Any], *keys: str) -> str:
    value: Any = data
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else ""


def _model(config: dict[str, Any]) -> str:
    return _dig(config, "agent", "model", "name")


def _instance_id(config: dict[str, Any]) -> str:
    return _dig(config, "problem_statement", "id")


def _stem(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.removesuffix(".traj") or name


def _title(instance: str, messages: list[Message]) -> str:
    """The instance id and the issue's first line (the line after ``ISSUE:`` in the
    task message), shortened to about TITLE_CHARS."""
    task = next((m.text for m in messages if m.is_user_turn and m.text.strip()), "")
    lines = [line.strip() for line in task.splitlines()]
    if "ISSUE:" in lines:
        lines = lines[lines.index("ISSUE:") + 1 :]
    issue = next((line for line in lines if line), "")
    title = f"{instance}: {issue}" if issue else instance
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"


def _agents_warning(path: str, history: list[Any]) -> list[str]:
    agents = list(dict.fromkeys(str(m.get("agent")) for m in history if "agent" in m))
    if len(agents) < 2:
        return []
    return [f"{path}: $.history: messages of {len(agents)} agents kept in one run: {agents}"]


def _calls(info: Any) -> int | None:
    """The number of model calls the totals count (``info.model_stats.api_calls``)."""
    stats = info.get("model_stats") if isinstance(info, dict) else None
    calls = stats.get("api_calls") if isinstance(stats, dict) else None
    return calls if isinstance(calls, int) and not isinstance(calls, bool) else None


def _totals_warning(path: str, info: Any) -> list[str]:
    """The aggregate usage SWE-agent recorded, which no single request can carry."""
    stats = info.get("model_stats") if isinstance(info, dict) else None
    if not isinstance(stats, dict) or not isinstance(stats.get("tokens_sent"), int):
        return []
    calls = stats.get("api_calls")
    over = f" over {calls} calls" if isinstance(calls, int) else ""
    return [
        f"{path}: $.info.model_stats: only totals were logged "
        f"({stats['tokens_sent']:,} tokens sent{over}); no request has measured usage"
    ]
