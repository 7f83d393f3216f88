"""Model calls seen by the capture proxy, recorded as requests of live runs.

Each call is read with its API's own reader (the importers' dialects), placed in the
conversation it continues (contextsim.ingest.captures: extend, redo, compaction or new), and
written: its new messages appended to that conversation's run (a new run when none is
continued), the call's parameters, status and timing as a CapturedCall.

Calls are grouped into sessions: the `X-Contextsim-Session` header, else the client's
own marker (contextsim.capture_session.session_marker); conversations of one session
after its first are subagents in its collection. Without a session, a call is matched
against its owner's most recent captured conversations.

One writer per process (a lock): placing a call reads what the previous call wrote. A
call is placed and counted before the database transaction that writes it, which holds
the write lock for the writing alone.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F

from contextsim import model as core
from contextsim.ingest.base import FormatError
from contextsim.ingest.captures import (
    FORMAT,
    Continuation,
    Conversation,
    Placement,
    choose,
    continuation,
    conversation,
)
from contextsim.ingest.exchanges import title_of
from contextsim.systems.anthropic_api.format import AnthropicImporter
from contextsim.systems.gemini_api.format import GeminiDialect
from contextsim.systems.openai_api.format import OpenAIImporter
from contextsim.systems.openai_api.responses import ResponsesDialect
from webapp.models import CapturedCall, Run
from webapp.store.actions.appends import do_append_messages, do_create_live_run, live_rows
from webapp.store.actions.rows import MessageRow
from webapp.store.actions.saving import Prepared, prepare
from webapp.store.actions.sessions import do_join_sessions
from webapp.store.reads import stored_run


class Reader(Protocol):
    """How a captured call's request and response bodies are read (exchanges.Dialect's
    request and response)."""

    name: str

    def request(self, path: str, where: str, data: Any) -> tuple[tuple[core.Message, ...], str]: ...

    def response(self, path: str, where: str, data: Any) -> tuple[core.Message | None, str]: ...


DIALECTS: dict[str, Reader] = {
    "anthropic/messages": AnthropicImporter(),
    "openai/chat.completions": OpenAIImporter(),
    "openai/responses": ResponsesDialect(),
    "gemini/generateContent": GeminiDialect(),
    "gemini/streamGenerateContent": GeminiDialect(),
}
CANDIDATES = 20
"""How many of a session's most recent conversations a call is matched against."""
WHERE = "captured call"
NOT_A_REQUEST = frozenset({401, 403, 404, 405})
"""Upstream answers to a call that never reached a model: kept as a call, not a request."""
_writer = threading.Lock()
_conversations: OrderedDict[int, tuple[int, Conversation]] = OrderedDict()
"""run id -> (its revision, its Conversation), the KEPT most recently placed: placing a
call needs no read of the run while this process wrote its last change. Bounded: a
Conversation holds its messages' keys, text included."""
KEPT = 64


@dataclass(frozen=True, slots=True)
class Capture:
    """One model call as the proxy saw it. Times are seconds since the epoch; `answer`
    is the response body (a streamed one put back together), None when there was none."""

    provider: str
    endpoint: str
    body: dict[str, Any]
    answer: dict[str, Any] | None
    status: int
    started: float
    first_byte: float | None
    done: float
    session: str = ""
    streamed: bool = False
    error: str = ""
    params: dict[str, Any] = field(default_factory=dict)


def record(owner: User, capture: Capture) -> CapturedCall:
    """Write `capture` as a request of the owner's run for its conversation; a call
    whose body cannot be read is kept (with why) without a run."""
    call = CapturedCall(
        owner=owner,
        session=capture.session[:200],
        provider=capture.provider,
        endpoint=capture.endpoint,
        model=str(capture.body.get("model") or "")[:120],
        params=capture.params,
        streamed=capture.streamed,
        status=capture.status,
        error=capture.error[:20_000],
        response_id=str((capture.answer or {}).get("id") or "")[:200],
        started=datetime.fromtimestamp(capture.started, UTC),
        first_byte_ms=_ms(capture.first_byte, capture.started),
        total_ms=_ms(capture.done, capture.started),
    )
    if capture.status in NOT_A_REQUEST:
        call.save()
        return call
    try:
        request, response = _read(capture)
    except FormatError as exc:
        call.error = (call.error + "\n" if call.error else "") + f"not recorded: {exc}"
        call.save()
        return call
    with _writer:
        # Placing reads, counting tokenizes: neither holds the database's write lock,
        # which only the write itself takes (a 200 MB call must not freeze every other
        # writer while its messages are counted).
        plan = _plan(owner, capture, request, response)
        with transaction.atomic():
            call.run, call.step = _write(owner, plan)
            call.save()
    return call


def _ms(at: float | None, start: float) -> float | None:
    return None if at is None else round((at - start) * 1000, 3)


def _read(capture: Capture) -> tuple[tuple[core.Message, ...], core.Message | None]:
    dialect = DIALECTS[f"{capture.provider}/{capture.endpoint}"]
    sent, _ = dialect.request(WHERE, "$", capture.body)
    request = tuple(replace(m, time=capture.started, source="") for m in sent)
    response = None
    if capture.answer is not None and 200 <= capture.status < 300:
        reply, _ = dialect.response(WHERE, "$response", capture.answer)
        if reply is not None:
            response = replace(reply, time=capture.first_byte or capture.done, source="")
    return request, response


@dataclass(frozen=True, slots=True)
class _Plan:
    """Where a call goes, worked out and counted before anything is written: a new run
    (`facts`, `prepared`, its stream key) or an append to `run` at `revision`."""

    capture: Capture
    reply: bool
    facts: core.Run | None = None
    prepared: Prepared | None = None
    stream_key: str = ""
    run: Run | None = None
    conv: Conversation | None = None
    placed: Placement | None = None
    step: Continuation | None = None
    rows: list[MessageRow] = field(default_factory=list)


def _plan(
    owner: User,
    capture: Capture,
    request: tuple[core.Message, ...],
    response: core.Message | None,
) -> _Plan:
    """Place the call (reads only) and count what it adds (no transaction open)."""
    runs = list(
        Run.objects.filter(
            owner=owner, format=FORMAT, stream_key__startswith=_key(capture.session)
        ).order_by("-last_append", "-id")[:CANDIDATES]
    )
    known = [_conversation(run) for run in runs]
    at, placed = choose(known, request)
    reply = () if response is None else (response,)
    if at < 0:
        facts, key = _new_facts(owner, capture, (*request, *reply), len(runs))
        return _Plan(capture, bool(reply), facts, prepare(facts), key)
    step = continuation(placed, request, reply)
    rows = live_rows(step.added)
    return _Plan(
        capture, bool(reply), run=runs[at], conv=known[at], placed=placed, step=step, rows=rows
    )


def _write(owner: User, plan: _Plan) -> tuple[Run, int]:
    """Write what `plan` worked out (in the caller's transaction); the run and the
    call's step."""
    if plan.facts is not None and plan.prepared is not None:
        run = do_create_live_run(owner, plan.facts, plan.stream_key, plan.prepared)
        if plan.capture.session:
            do_join_sessions(owner, [run])
        conv = conversation(plan.facts.messages)
    else:
        assert plan.run is not None and plan.conv is not None
        assert plan.placed is not None and plan.step is not None
        run, conv = _continue(plan.run, plan.conv, plan.placed, plan.step, plan.rows, plan.reply)
    _remember(run, conv)
    return run, _step(run, plan.reply)


def _key(session: str) -> str:
    return f"capture:{session}:"


def _conversation(run: Run) -> Conversation:
    kept = _conversations.get(run.pk)
    if kept is not None and kept[0] == run.revision:
        _conversations.move_to_end(run.pk)
        return kept[1]
    boundary = max((c["before_message"] for c in run.compactions), default=0)
    conv = conversation(stored_run(run).messages, boundary)
    _remember(run, conv)
    return conv


def _remember(run: Run, conv: Conversation) -> None:
    _conversations[run.pk] = (run.revision, conv)
    _conversations.move_to_end(run.pk)
    while len(_conversations) > KEPT:
        _conversations.popitem(last=False)


def _new_facts(
    owner: User, capture: Capture, messages: tuple[core.Message, ...], others: int
) -> tuple[core.Run, str]:
    """The run of a conversation seen for the first time, and its stream key; a
    session's later ones are its subagents."""
    session = capture.session
    first = not Run.objects.filter(owner=owner, format=FORMAT, session_id=session).exists()
    facts = core.Run(
        title=title_of(messages),
        messages=messages,
        format=FORMAT,
        model=str(capture.body.get("model") or ""),
        session_id=session if first or not session else f"{session}/{others + 1}",
        parent_session_id="" if first or not session else session,
        subagent=bool(session) and not first,
    )
    count = Run.objects.filter(owner=owner, stream_key__startswith=_key(session)).count()
    return facts, f"{_key(session)}{count + 1}"


def _continue(
    run: Run,
    conv: Conversation,
    placed: Placement,
    step: Continuation,
    rows: list[MessageRow],
    replied: bool,
) -> tuple[Run, Conversation]:
    """Append the call (`step`, its new messages counted as `rows`; `replied`: it got a
    response) to the conversation it continues; returns the run and the conversation
    after."""
    end = run.message_count
    if step.compacted:
        _add_compaction(run, end, conv)
    added, start = step.added, end - step.replaced
    keys = conv.keys[: len(conv.keys) - step.replaced]
    if not added:
        return run, conv
    run = do_append_messages(run, added, start, rows)
    more = conversation(added)
    boundary = end if placed.kind == "compaction" else conv.boundary
    last = more.last_text if replied else ""
    return run, Conversation((*keys, *more.keys), conv.head, boundary, last, replied)


def _add_compaction(run: Run, before: int, conv: Conversation) -> None:
    """Record that the conversation compacted before message `before`: its last
    measured context is the size it had."""
    last = run.messages.filter(usage_input__isnull=False).order_by("-index").first()
    pre = None
    if last is not None:
        pre = (last.usage_input or 0) + (last.usage_cache_read or 0) + (last.usage_cache_write or 0)
    marks = [*run.compactions, {"before_message": before, "pre_tokens": pre, "trigger": "captured"}]
    Run.objects.filter(pk=run.pk).update(
        compactions=marks, revision=F("revision") + 1, rewritten=F("revision") + 1
    )
    run.refresh_from_db()


def _step(run: Run, replied: bool) -> int:
    """The request index of the call: the run's last request when it was answered,
    else the pending one after it."""
    return run.request_count - 1 if replied else run.request_count
