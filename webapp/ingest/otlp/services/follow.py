"""What a receiving process follows of each span group (webapp.ingest.otlp.services.receiving): the
conversation it put together from the group's calls, so that the next batch of a
conversation adds its calls instead of reading every stored one again."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from django.contrib.auth.models import User

from contextsim import model as core
from contextsim.systems.otel.spans import BODY, Conversation, Inputs, SpanCall, span_call
from webapp.ingest.otlp import wire as wire
from webapp.ingest.otlp.services import events as span_events
from webapp.models import Run, SpanGroup


def conversation_of(group: SpanGroup, calls: list[SpanCall]) -> Conversation:
    """The group's conversation built from `calls` (in start order)."""
    conversation = Conversation(group.key, bool(calls) and calls[0].trace_id == group.key)
    for call in calls:
        conversation.add(call)
    return conversation


@dataclass(slots=True)
class Followed:
    """What this process knows of a group it brought in step: its conversation so far,
    the group's version it was built from (SpanGroup.version), and the run it synced:
    its id, its revision after, and the messages it then holds."""

    conversation: Conversation
    version: int = 0
    run_id: int | None = None
    revision: int = -1
    messages: tuple[core.Message, ...] = ()

    def continues(self, version: int, run: Run | None, start: int) -> bool:
        """Whether calls starting at `start` (ns) can be added to the conversation:
        the group's stored spans and its run are those it followed, unchanged since,
        and they start no earlier than the last call added."""
        last = self.conversation.last_start
        return (
            self.version == version
            and run is not None
            and (run.pk, run.revision) == (self.run_id, self.revision)
            and last is not None
            and start >= last
        )


FOLLOWED_KEPT = 2_000
"""How many groups this process keeps following (the most recently changed)."""
FOLLOWED: OrderedDict[tuple[int, str], Followed] = OrderedDict()
INPUTS = Inputs(FOLLOWED_KEPT)


def stored_calls(owner: User, group: SpanGroup) -> list[SpanCall]:
    """The group's calls in start order, read again from the spans kept, with the
    events received for them. Each span's input messages are read only where they go
    beyond the span before's (contextsim.systems.otel.spans.Inputs), so reading a long
    conversation again costs what its calls added, not the square of its length.
    Nothing read is kept: calls held for every span received would be a large part
    of what the garbage collector walks, and this is needed only when a process did
    not follow the group (calls out of order, another process, a restart)."""
    rows = list(
        group.spans.order_by("start", "id").values_list("trace_id", "span_id", "packed", "body")
    )
    events = span_events.events_of(owner, {(t, s) for t, s, _, _ in rows}) if rows else {}
    inputs = Inputs(1)
    calls = []
    for t, s, how, body in rows:
        span = span_events.joined(wire.unpacked(how, bytes(body)), events.get((t, s), []))
        call = span_call(BODY, f"span {t}/{s}", span, inputs)
        if call is not None:
            calls.append(call)
    return calls
