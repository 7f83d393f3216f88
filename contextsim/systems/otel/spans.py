"""OpenTelemetry GenAI spans as OTLP JSON: an export ``{"resourceSpans": [{"scopeSpans":
[{"spans": [...]}]}]}``, or JSONL of them (the collector's file exporter). The same
mapping serves the OTLP/HTTP receiver: `calls_of` reads one export, `runs_from` groups
calls into runs.

Model call spans: ``gen_ai.operation.name`` chat, generate_content or text_completion;
lacking it, OpenInference's ``openinference.span.kind`` LLM; lacking both, a span with
recorded messages or OpenLLMetry's ``llm.request.type`` chat/completion. Read, the first
present of:

- the current GenAI conventions' ``gen_ai.input.messages`` / ``gen_ai.output.messages``
  (first choice kept), and OpenLLMetry's indexed ``gen_ai.prompt.{i}.*`` (otel_genai);
- OpenInference's ``llm.input_messages.{i}...`` / ``llm.output_messages...``
  (otel_openinference);
- the older conventions' span events ``gen_ai.{system,user,assistant,tool}.message``,
  ``gen_ai.choice``, ``gen_ai.content.prompt|completion`` (otel_events);

plus ``gen_ai.system_instructions`` and the tools offered (``gen_ai.tool.definitions``,
OpenInference ``llm.tools``).
- Usage: ``gen_ai.usage.input_tokens``, ``output_tokens``, ``cache_read.input_tokens``,
  ``cache_creation.input_tokens`` (OpenLLMetry: ``prompt_tokens`` ...; OpenInference:
  ``llm.token_count.*``). Input includes cached tokens (semconv PR #3163; OpenLLMetry
  and OpenInference sum them too): Usage.input_tokens = input - cache read - cache
  write, unless the cache counts exceed the input.
- Grouping: one run per ``gen_ai.conversation.id`` (semconv v1.37) or OpenInference's
  ``session.id``, read on the call's own span, else on its nearest ancestor in the
  same export (an agent's ``invoke_agent`` span names it, its calls often not); else
  one run per trace. A run's calls are
  in start order, rebuilt like logged exchanges (exchanges.rebuild), each call sent at
  its span's start and answered at its end; a call without recorded input (content
  capture is opt-in) gets the history so far. Not read: Jaeger/Zipkin JSON; no
  subagent grouping.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from contextsim.ingest.base import FormatError, expect
from contextsim.ingest.exchanges import Exchange, Rebuilding, title_of, tool_definitions
from contextsim.model import Message, Run, Usage
from contextsim.systems.otel import events, genai, openinference
from contextsim.systems.otel.values import (
    Attrs,
    decoded,
    items,
    span_attrs,
    start_nanos,
    token_attribute,
)

CALLS = ("chat", "generate_content", "text_completion")
USAGE = (  # input, cache read, cache write, output: current names first
    ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens"),
    ("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens"),
    ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
)
MODEL = ("gen_ai.response.model", "gen_ai.request.model", *openinference.MODEL)
GROUP = ("gen_ai.conversation.id", openinference.SESSION)
BODY = "request body"
FORMAT = "otel"
"""The format name of runs made of spans (OTelImporter.name)."""


@dataclass(frozen=True, slots=True)
class SpanCall:
    """One model call span: the run it belongs to (`group`: its conversation or session
    id, else its trace id), its ids (hex, as OTLP JSON writes them), its start in
    nanoseconds since the epoch, the call, and whether the call's input was recorded."""

    group: str
    trace_id: str
    span_id: str
    start: int
    exchange: Exchange
    recorded: bool = True
    data: Any = field(default=None, compare=False, repr=False)
    """The span as read (OTLP JSON), to keep and read again."""
    parent: str = ""
    """The parent span's id (hex), if any."""
    own_group: bool = True
    """Whether the span names its conversation itself (else it was found on an
    ancestor, or it is the trace's)."""


@dataclass(frozen=True, slots=True)
class SpanCalls:
    """What one export holds: its model calls in export order, and one reason per model
    call span that could not be read ("span <id>: <JSON path>: <what was expected>")."""

    calls: tuple[SpanCall, ...]
    rejected: tuple[str, ...] = ()
    named: tuple[tuple[str, str, str], ...] = ()
    """(trace id, span id, conversation id) of every span other than a model call's
    that names its conversation (an agent's span usually does, its calls not)."""


class Inputs:
    """The input messages each conversation's last call sent (otel_genai.Known, for the
    `kept` conversations seen last): a receiver that keeps one reads of every call only
    what it adds to the conversation. Holding it changes nothing read but its
    messages' `source` (the first call's that sent them)."""

    def __init__(self, kept: int = 2_000) -> None:
        self.kept = kept
        self._known: OrderedDict[str, genai.Known] = OrderedDict()

    def of(self, group: str) -> genai.Known:
        """The group's entry (a new, empty one if none is kept)."""
        found = self._known.pop(group, None) or genai.Known()
        self._known[group] = found
        while len(self._known) > self.kept:
            self._known.popitem(last=False)
        return found


def calls_of(export: Any, path: str = BODY, inputs: Inputs | None = None) -> SpanCalls:
    """The model calls of one OTLP JSON export (``{"resourceSpans": [...]}``, ids in hex).
    A span that is not a model call is skipped; a model call span that cannot be read is
    rejected with the reason, the others kept. Raises FormatError when the export itself
    is not one (its JSON path and what was expected). `inputs`: see Inputs."""
    rejected: list[str] = []
    named: list[tuple[str, str, str]] = []
    calls = export_calls(path, "$", export, rejected, inputs, named)
    return SpanCalls(tuple(calls), tuple(rejected), tuple(named))


def runs_from(path: str, calls: Iterable[SpanCall], warnings: list[str]) -> tuple[Run, ...]:
    """One run per group (in the order groups are first seen), its calls in start order;
    what rebuilding changed is appended to `warnings`. `path` names the source."""
    groups: dict[str, list[SpanCall]] = defaultdict(list)
    for call in calls:
        groups[call.group].append(call)
    return tuple(_run(path, key, members, warnings) for key, members in groups.items())


def span_call(path: str, where: str, span: Any, inputs: Inputs | None = None) -> SpanCall | None:
    """The model call of the OTLP JSON span `span` (at JSON path `where`), None for a
    span of anything else; FormatError naming the attribute that could not be read.
    `inputs`: see Inputs."""
    expect(path, where, span, dict, "an object")
    trace = expect(path, f"{where}.traceId", span.get("traceId"), str, "a string")
    attrs = span_attrs(path, where, span)
    if not is_call(attrs):
        return None
    own = named_by(attrs)
    group = own or trace
    exchange, recorded = _call(attrs, None if inputs is None else inputs.of(group))
    span_id, parent = str(span.get("spanId") or ""), str(span.get("parentSpanId") or "")
    start = start_nanos(span)
    return SpanCall(group, trace, span_id, start, exchange, recorded, span, parent, own is not None)


def named_by(attrs: Attrs) -> str | None:
    """The conversation a call's own span names (GROUP), of any value type."""
    return next((str(attrs.values[k]) for k in GROUP if attrs.values.get(k)), None)


def export_calls(
    path: str,
    root: str,
    export: Any,
    rejected: list[str] | None,
    inputs: Inputs | None = None,
    named: list[tuple[str, str, str]] | None = None,
) -> list[SpanCall]:
    """The export's model calls, a call that names no conversation in the one its
    nearest ancestor in the export names (else its trace's); a bad span raises, or
    with `rejected` is named there. `named` gets SpanCalls.named."""
    calls = []
    family: dict[str, tuple[str, str | None]] = {}  # span id -> (parent id, conversation)
    for where, span in spans_of(path, root, export):
        own, span_id = None, ""
        if isinstance(span, dict):
            own = named_on(span)
            span_id = str(span.get("spanId") or "")
            if span_id:
                family[span_id] = (str(span.get("parentSpanId") or ""), own)
        try:
            call = span_call(path, where, span, inputs)
        except FormatError as error:
            if rejected is None:
                raise
            rejected.append(f"span {span.get('spanId') or '?'}: {error.where}: {error.problem}")
            continue
        if call is not None:
            calls.append(call)
        elif own is not None and span_id and named is not None:
            named.append((str(span.get("traceId") or ""), span_id, own))
    return [_inherited(call, family) for call in calls]


def named_on(span: dict[str, Any]) -> str | None:
    """The conversation the span names (GROUP), read without decoding the rest."""
    for pair in span.get("attributes") or ():
        if isinstance(pair, dict) and pair.get("key") in GROUP:
            value = pair.get("value")
            text = value.get("stringValue") if isinstance(value, dict) else None
            if isinstance(text, str) and text:
                return text
    return None


def _inherited(call: SpanCall, family: dict[str, tuple[str, str | None]]) -> SpanCall:
    """`call` in the conversation its nearest ancestor names, when it names none."""
    if call.own_group:
        return call
    group = group_of(None, call.group, call.parent, family)
    return call if group == call.group else replace(call, group=group)


def group_of(
    own: str | None, trace: str, parent: str, family: dict[str, tuple[str, str | None]]
) -> str:
    """The run of a call: the conversation its span names (`own`), else the one its
    nearest ancestor in `family` names (span id -> (parent id, conversation)), else its
    trace."""
    if own is not None:
        return own
    seen, at = set(), parent
    while at and at in family and at not in seen:
        seen.add(at)
        parent, named = family[at]
        if named is not None:
            return named
        at = parent
    return trace


def spans_of(path: str, root: str, export: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every span of an export with its JSON path, in export order."""
    expect(path, root, export, dict, "an OTLP export object with 'resourceSpans'")
    for res, resource in items(path, f"{root}.resourceSpans", export.get("resourceSpans")):
        for scope_at, scope in items(path, f"{res}.scopeSpans", resource.get("scopeSpans")):
            yield from items(path, f"{scope_at}.spans", scope.get("spans"))


def _run(path: str, key: str, calls: list[SpanCall], out: list[str]) -> Run:
    """The group's run (see Conversation)."""
    conversation = Conversation(key, calls[0].trace_id == key)
    for call in sorted(calls, key=lambda c: c.start):
        conversation.add(call)
    return conversation.run(path, out)


class Conversation:
    """One group's run built a call at a time, as `runs_from` builds it from all of
    them: `add` its calls in start order (ties in the order received), read `run`
    whenever, and keep adding. A call whose input was not recorded is sent the history
    so far. A receiver so pays for each call once."""

    def __init__(self, key: str, by_trace: bool) -> None:
        """`key`: the group; `by_trace`: whether it is a trace id (for warnings)."""
        self.key, self.by_trace = key, by_trace
        self.rebuilding = Rebuilding()
        self.previous: tuple[Message, ...] = ()
        self.blind = 0
        self.last_start: int | None = None
        """The start of the last call added (ns): a later call must not start before."""

    def add(self, call: SpanCall) -> None:
        """Follow one more call (starting no earlier than the last one added)."""
        exchange = call.exchange
        if call.recorded:
            request = exchange.request
        else:
            request, self.blind = self.previous, self.blind + 1
        self.rebuilding.add(replace(exchange, request=request))
        self.previous = request + ((exchange.response,) if exchange.response else ())
        self.last_start = call.start

    def run(self, path: str, out: list[str] | None) -> Run:
        """The run of the calls added so far; what rebuilding changed goes to `out`
        (None: not worked out)."""
        key = self.key
        if self.blind and out is not None:
            kind = "trace" if self.by_trace else "conversation"
            note = f"{self.blind} call(s) recorded no input (content is opt-in)"
            out.append(f"{path}: {kind} {key}: {note}")
        messages, model = self.rebuilding.result(path, out)
        return Run(title_of(messages), messages, FORMAT, model, session_id=key)


def is_call(attrs: Attrs) -> bool:
    """True for the span of one model call (see the module docstring)."""
    values = attrs.values
    if values.get("gen_ai.operation.name") is not None:
        return bool(values["gen_ai.operation.name"] in CALLS)
    if values.get(openinference.SPAN_KIND) is not None:
        return bool(values[openinference.SPAN_KIND] == "LLM")
    recorded = "gen_ai.input.messages" in values or "gen_ai.prompt.0.role" in values
    return (
        recorded
        or values.get("llm.request.type") in ("chat", "completion")
        or events.records_messages(attrs)
    )


def _call(attrs: Attrs, known: genai.Known | None) -> tuple[Exchange, bool]:
    """A span's call (its first output carries its usage) and whether input was recorded."""
    values = attrs.values
    request, outputs = _sent(attrs, known)
    system = genai.messages(attrs, "gen_ai.system_instructions")
    request = request if system is None else (*system, *(request or ()))
    tools = openinference.tools(attrs)
    if values.get("gen_ai.tool.definitions") is not None:
        key = "gen_ai.tool.definitions"
        tools = tool_definitions(attrs.path, attrs.at(key), decoded(values[key]))
    request = request if tools is None else (tools, *(request or ()))
    response, usage = (outputs[0] if outputs else None), _usage(attrs)
    if usage is not None:
        response = replace(response or Message("assistant", (), source=attrs.where), usage=usage)
    model = next((str(values[k]) for k in MODEL if values.get(k)), "")
    exchange = Exchange(attrs.where, request or (), response, model, attrs.start, attrs.end)
    return exchange, request is not None


def _sent(
    attrs: Attrs, known: genai.Known | None
) -> tuple[tuple[Message, ...] | None, tuple[Message, ...]]:
    """The messages sent (None when not recorded) and the outputs, from the first of the
    mappings the span uses (see the module docstring)."""
    values = attrs.values
    if "gen_ai.input.messages" in values or "gen_ai.output.messages" in values:
        outputs = genai.messages(attrs, "gen_ai.output.messages") or ()
        return genai.messages(attrs, "gen_ai.input.messages", known), outputs
    if openinference.records_messages(values):
        sent = openinference.messages(attrs, openinference.INPUT)
        return sent or None, openinference.messages(attrs, openinference.OUTPUT)
    if events.records_messages(attrs):
        sent, reply = events.exchange(attrs)
        # Events without content (capture is opt-in) record roles, not what was sent.
        return (sent if any(m.parts for m in sent) else None), (reply,) if reply else ()
    prompts = genai.indexed_messages(attrs, "gen_ai.prompt")
    return tuple(prompts) or None, tuple(genai.indexed_messages(attrs, "gen_ai.completion"))


def _usage(attrs: Attrs) -> Usage | None:
    """The span's usage (see the module docstring); None without input tokens."""
    names = zip(USAGE, openinference.USAGE, strict=True)
    counts = [token_attribute(attrs, (*genai_names, oi)) for genai_names, oi in names]
    if counts[0] is None:
        return None
    total, read, write, output = (c or 0 for c in counts)
    return Usage(total - read - write if read + write <= total else total, read, write, output)
