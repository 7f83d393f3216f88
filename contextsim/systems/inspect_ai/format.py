"""Inspect AI eval logs (``inspect eval`` writes them as JSON, ``{"eval", "samples"}``).

One run per sample, one request per ``model`` event, read from the exact provider call
it recorded (``call.request`` / ``call.response``), with ``attachment://`` strings
resolved. Calls to OpenAI (Chat Completions) and Anthropic models are read in their own
wire format; other providers' are skipped with a warning.
"""

from __future__ import annotations

from typing import Any

from contextsim.ingest.base import Document, FormatError, ParsedFile, Source, expect, parse_time
from contextsim.ingest.exchanges import Dialect, Exchange, rebuild
from contextsim.model import Run
from contextsim.systems.anthropic_api.format import AnthropicImporter
from contextsim.systems.openai_api.format import OpenAIImporter


class InspectImporter:
    """Inspect AI eval logs (see the module docstring)."""

    name = "inspect-ai"
    label = "Inspect AI eval logs"

    def sniff(self, source: Source) -> bool:
        return isinstance(source, Document) and _is_inspect(source.data)

    def parse(self, source: Source) -> ParsedFile:
        assert isinstance(source, Document)  # sniff claims documents only
        return _parse_inspect(source)


ATTACHMENT = "attachment://"


def _is_inspect(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("eval"), dict) and "samples" in data


def _parse_inspect(source: Document) -> ParsedFile:
    """One run per sample of an Inspect AI eval log."""
    path, data = source.path, source.data
    samples = expect(path, "$.samples", data.get("samples"), list, "a list of samples")
    if not samples:
        raise FormatError(path, "$.samples", "expected at least one sample, found none")
    warnings: list[str] = []
    runs = [
        _sample(path, f"$.samples[{i}]", s, data["eval"], warnings) for i, s in enumerate(samples)
    ]
    return ParsedFile(InspectImporter.name, tuple(runs), tuple(warnings))


def _sample(path: str, where: str, sample: Any, info: dict[str, Any], warnings: list[str]) -> Run:
    """A sample's run: its model events in order, each one request."""
    expect(path, where, sample, dict, "a sample object")
    events = expect(path, f"{where}.events", sample.get("events"), list, "a list of events")
    stored = expect(
        path, f"{where}.attachments", sample.get("attachments") or {}, dict, "an object"
    )
    calls = [(f"{where}.events[{j}]", e) for j, e in enumerate(events) if _is_model_event(e)]
    exchanges = [x for at, e in calls if (x := _model_call(path, at, e, stored)) is not None]
    if len(exchanges) < len(calls):
        warnings.append(
            f"{path}: {where}: skipped {len(calls) - len(exchanges)} model event(s) that kept "
            "no Chat Completions or Anthropic call (call.request)"
        )
    messages, model = rebuild(path, exchanges, warnings)
    sample_id, epoch = sample.get("id"), sample.get("epoch")
    title = f"{info.get('task') or 'inspect'} sample {sample_id}"
    title += f" epoch {epoch}" if epoch not in (None, 1) else ""
    return Run(
        title,
        messages,
        InspectImporter.name,
        model or str(info.get("model") or ""),
        session_id=str(sample.get("uuid") or f"{sample_id}:{epoch}"),
    )


def _is_model_event(event: Any) -> bool:
    return isinstance(event, dict) and event.get("event") == "model"


def _model_call(
    path: str, where: str, event: dict[str, Any], attachments: dict[str, Any]
) -> Exchange | None:
    """The exchange a model event recorded, or None when it kept no provider call."""
    call = event.get("call")
    if not isinstance(call, dict) or not isinstance(call.get("request"), dict):
        return None
    request = _resolve(call["request"], attachments)
    response = _resolve(call.get("response"), attachments)
    dialect = _dialect(request, response)
    if dialect is None:
        return None
    sent, model = dialect.request(path, f"{where}.call.request", request)
    reply, served = None, ""
    if isinstance(response, dict):
        reply, served = dialect.response(path, f"{where}.call.response", response)
    return Exchange(
        where,
        sent,
        reply,
        model or served or str(event.get("model") or ""),
        parse_time(event.get("timestamp")),
        parse_time(event.get("completed")),
    )


def _dialect(request: dict[str, Any], response: Any) -> Dialect | None:
    # Inspect records each provider's own wire format; read the two this module knows.
    if not isinstance(request.get("messages"), list):
        return None
    if "system" in request or (isinstance(response, dict) and "stop_reason" in response):
        return AnthropicImporter()
    if response is None or (isinstance(response, dict) and "choices" in response):
        return OpenAIImporter()
    return None


def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
    """`value` with every ``attachment://<hash>`` string replaced by its stored text."""
    if isinstance(value, str):
        if value.startswith(ATTACHMENT):
            stored = attachments.get(value[len(ATTACHMENT) :])
            return stored if isinstance(stored, str) else value
        return value
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value
