"""Captures in claude-trace's layout: JSONL, one model call a line,
``{request: {timestamp, method, url, headers, body}, response: {timestamp, status_code,
headers, body | body_raw, events}, logged_at}``.

A capture holds what was sent, whole: the system prompt, the tool definitions and every
message, as the provider got them. So its runs are exact (format
contextsim.ingest.captures.FORMAT: reconciliation fits a tokenizer's scale, no unlogged
overhead).

- Calls are read by their endpoint: Anthropic Messages (``/messages``), OpenAI Responses
  (``/responses``, Codex's) and Chat Completions (``/chat/completions``). Other calls
  (model lists, analytics, failed calls) are skipped and counted in a warning.
- A response is its ``body`` (a streamed one reassembled), else its ``body_raw`` server-
  sent events, added up as the provider's client would.
- Calls are placed in conversations as the capture proxy places them
  (contextsim.ingest.captures): a call that repeats a conversation's view extends it; one
  that opens with the summary the conversation's last response wrote continues it after a
  Compaction (the ``/compact`` request is the call that wrote it); anything else (a
  title or a haiku side call, another agent) is a run of its own, in the order first
  seen. Each response keeps its usage and the model that answered.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlparse

from contextsim.ingest import sse
from contextsim.ingest.base import (
    Document,
    FormatError,
    ParsedFile,
    Record,
    Source,
    expect,
    parse_time,
)
from contextsim.ingest.captures import (
    FORMAT,
    choose,
    continuation,
    conversation,
    session_marker,
)
from contextsim.ingest.exchanges import Dialect, title_of
from contextsim.model import Compaction, Message, Run
from contextsim.systems.anthropic_api.format import AnthropicImporter
from contextsim.systems.openai_api.format import OpenAIImporter
from contextsim.systems.openai_api.responses import ResponsesDialect

ENDPOINTS: tuple[tuple[str, Any, Any], ...] = (
    ("/messages", AnthropicImporter(), sse.anthropic_message),
    ("/responses", ResponsesDialect(), sse.response),
    ("/chat/completions", OpenAIImporter(), sse.chat_completion),
)
"""Endpoint path endings, the dialect of their bodies and how their streams add up."""


class ClaudeTraceImporter:
    name = "claude-trace"
    label = "claude-trace capture (request/response JSONL)"

    def sniff(self, source: Source) -> bool:
        """JSONL whose records pair a request with a URL and a response with a status
        (a capture of one call reads as a JSON document of one such record)."""
        if isinstance(source, Document):
            return _is_call(source.data)
        sample = [r.data for r in source.sample]
        return bool(sample) and all(_is_call(d) for d in sample)

    def parse(self, source: Source) -> ParsedFile:
        """The runs of the captured calls (see the module docstring). Raises FormatError
        naming the line and key of a call whose request or response is malformed."""
        path = source.path
        records = [Record(1, source.data)] if isinstance(source, Document) else source
        runs: list[_Draft] = []
        skipped: Counter[str] = Counter()
        for record in records:
            where = f"line {record.line}"
            data = expect(path, where, record.data, dict, "a captured call object")
            if not _is_call(data):
                raise FormatError(path, where, "expected {request: {url, ...}, response: {...}}")
            call = _call(path, where, data, skipped)
            if call is not None:
                _place(runs, *call)
        own = () if isinstance(source, Document) else tuple(source.warnings)
        warnings = [f"{path}: skipped {n} x {what}" for what, n in sorted(skipped.items())]
        if not runs:
            said = "; ".join(warnings)
            raise FormatError(path, "", f"no model call in the capture ({said})")
        return ParsedFile(self.name, _of_sessions([d.run() for d in runs]), (*own, *warnings))


def _of_sessions(runs: list[Run]) -> tuple[Run, ...]:
    """The runs, each of a client session after its first (a title or a haiku side
    call, a subagent) linked to that first one as its parent, with an id of its own."""
    first: dict[str, int] = {}
    out = []
    for i, run in enumerate(runs):
        marker = run.session_id
        if not marker or marker not in first:
            first.setdefault(marker, i)
            out.append(run)
            continue
        out.append(replace(run, session_id=f"{marker}#{i}", parent_session_id=marker))
    return tuple(out)


def _is_call(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    request, response = data.get("request"), data.get("response")
    return (
        isinstance(request, dict)
        and isinstance(request.get("url"), str)
        and isinstance(response, dict)
        and "status_code" in response
    )


def _call(
    path: str, where: str, data: dict[str, Any], skipped: Counter[str]
) -> tuple[tuple[Message, ...], Message | None, str, str] | None:
    """(messages sent, the response, its model, the client's session) of a model call,
    or None for a call of another kind (counted in `skipped`)."""
    request, response = data["request"], data["response"]
    method = str(request.get("method") or "POST").upper()
    route = urlparse(request["url"]).path.rstrip("/")
    found = next((e for e in ENDPOINTS if route.endswith(e[0])), None)
    if found is None or method != "POST":
        skipped[f"{method} {route or '/'} (not a model call)"[:120]] += 1
        return None
    if response.get("status_code") != 200:
        skipped[f"call answered {response.get('status_code')}"] += 1
        return None
    _, found_dialect, stream = found
    dialect: Dialect = found_dialect
    body = request.get("body")
    if isinstance(body, str):
        body = _json(path, f"{where}.request.body", body)
    sent, model = dialect.request(path, f"{where}.request.body", body)
    reply_body = response.get("body")
    if not isinstance(reply_body, dict) and isinstance(response.get("body_raw"), str):
        try:
            reply_body = stream(response["body_raw"])
        except sse.StreamError as error:
            raise FormatError(path, f"{where}.response.body_raw", str(error)) from None
    reply: Message | None = None
    served = ""
    if isinstance(reply_body, dict):
        reply, served = dialect.response(path, f"{where}.response.body", reply_body)
    answered = served or model
    if reply is not None:
        usage = reply.usage
        if usage is not None and answered:
            usage = replace(usage, model=answered[:200])
        reply = replace(
            reply, usage=usage, source=where, time=parse_time(response.get("timestamp"))
        )
    at = parse_time(request.get("timestamp"))
    sent = tuple(replace(m, source=m.source or where, time=m.time or at) for m in sent)
    headers = request.get("headers")
    marker = session_marker(body, headers if isinstance(headers, dict) else {})
    return sent, reply, answered, marker


def _json(path: str, where: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise FormatError(path, where, "expected a JSON request body") from None


@dataclass(slots=True)
class _Draft:
    """A conversation being rebuilt from the calls placed in it."""

    messages: list[Message]
    session: str
    compactions: list[Compaction] = field(default_factory=list)
    boundary: int = 0
    models: Counter[str] = field(default_factory=Counter)

    def run(self) -> Run:
        messages = tuple(self.messages)
        model = self.models.most_common(1)[0][0] if self.models else ""
        return Run(
            title=title_of(messages),
            messages=messages,
            format=FORMAT,
            model=model,
            session_id=self.session,
            compactions=tuple(self.compactions),
        )


def _place(
    runs: list[_Draft],
    request: tuple[Message, ...],
    reply: Message | None,
    model: str,
    session: str,
) -> None:
    """Add one call to the conversation it continues, or start one."""
    recent = list(reversed(runs))
    index, placed = choose([conversation(d.messages, d.boundary) for d in recent], request)
    answer = (reply,) if reply is not None else ()
    if index < 0:
        draft = _Draft([*request, *answer], session)
        runs.append(draft)
    else:
        draft = recent[index]
        step = continuation(placed, request, answer)
        if step.compacted:
            # As the capture proxy records it: the last measured context, "captured".
            measured = [m.usage.context for m in draft.messages if m.usage is not None]
            before = len(draft.messages)
            pre = measured[-1] if measured else None
            draft.compactions.append(Compaction(before, pre, "captured"))
            draft.boundary = before
        del draft.messages[len(draft.messages) - step.replaced :]
        draft.messages += step.added
    if model:
        draft.models[model] += 1
