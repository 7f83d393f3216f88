"""LangChain message dumps: what ``langchain_core.messages.messages_to_dict`` writes.

Accepted: a JSON list of ``{"type": ..., "data": {...}}`` entries, one per message; a
JSON object holding that list under ``messages`` (saved agent state; other keys are
ignored); JSONL with one entry per line. ``type`` is the message class: ``system``,
``human``, ``ai``, ``tool``, ``chat`` (role in ``data.role``), ``function`` (legacy) or
a chunk class name (``AIMessageChunk`` ...). ``data`` holds the message's fields:

- ``content``: a string or a list of blocks: LangChain's standard ones (text,
  reasoning, tool_call, server_tool_call/result, image, audio, file, text-plain) or a
  provider's own, kept as the provider wrote them: Anthropic's (thinking, tool_use,
  tool_result ...), OpenAI's (image_url, function_call, reasoning with a ``summary``).
  Blocks of other types carry nothing we model: skipped, counted in one warning.
- an AI message's ``tool_calls`` (``args`` a dict, rendered as JSON text) are
  authoritative: a call block of the content with the same id (providers keep their
  tool_use blocks there) becomes that call, in the content's order; the other calls
  follow, then ``invalid_tool_calls`` (arguments that did not parse, kept as sent).
- a ``tool`` message answers ``tool_call_id``; ``status: "error"`` sets is_error.
- ``usage_metadata`` on an AI message is the usage of the request that produced it.
  Its ``input_tokens`` is the sum of every input token type, so Usage.input_tokens =
  input_tokens - cache_read - cache_creation (``input_token_details``) and
  Usage.context equals input_tokens.
- the model is the last AI message's ``response_metadata.model_name`` (or ``model``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from itertools import islice
from typing import Any

from contextsim.ingest.base import (
    Document,
    FormatError,
    Lines,
    Names,
    ParsedFile,
    Source,
    arguments_text,
    expect,
    text_of,
)
from contextsim.ingest.exchanges import SNIFF_ENTRIES, title_of, tokens
from contextsim.model import (
    ImagePart,
    Message,
    Part,
    Role,
    Run,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from contextsim.systems.anthropic_api.format import CALL_BLOCKS as ANTHROPIC_CALLS
from contextsim.systems.anthropic_api.format import RESULT_BLOCKS as ANTHROPIC_RESULTS

# Message classes -> our roles ("chat" takes data.role); an unmerged streamed chunk is
# saved under its class name (AIMessageChunk ...).
TYPES: dict[str, Role] = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
TYPES["function"] = "tool"
CLASSES = {"System": "system", "Human": "human", "AI": "ai", "Tool": "tool", "Function": "function"}
TYPES |= {f"{c}MessageChunk": TYPES[t] for c, t in CLASSES.items()}
TYPES_EXPECTED = "system, human, ai, tool, chat or function"
CHAT_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user"}
CHAT_ROLES |= {"human": "user", "assistant": "assistant", "ai": "assistant"}
CHAT_ROLES_EXPECTED = "system, developer, user, human, assistant or ai"
CHAT_TYPES = Names({"chat", "ChatMessageChunk"})
MEDIA = Names({"image", "image_url", "audio", "input_audio", "video", "file", "document"})
# Block types -> the keys of their call id and arguments, or result id and body.
CALL_BLOCKS = dict.fromkeys(ANTHROPIC_CALLS, ("id", "input"))
CALL_BLOCKS |= dict.fromkeys(("tool_call", "server_tool_call"), ("id", "args"))
CALL_BLOCKS["function_call"] = ("call_id", "arguments")
RESULT_BLOCKS = dict.fromkeys(ANTHROPIC_RESULTS, ("tool_use_id", "content"))
RESULT_BLOCKS["server_tool_result"] = ("tool_call_id", "output")


class LangChainImporter:
    """LangChain ``messages_to_dict`` dumps (see the module docstring)."""

    name = "langchain"
    label = "LangChain message dumps (messages_to_dict)"

    def sniff(self, source: Source) -> bool:
        """True when every sampled entry is ``{"type": str, "data": {"content": ...}}``;
        no other supported format writes ``data`` next to ``type``."""
        if isinstance(source, Lines):
            sample = [record.data for record in source.sample]
        else:
            sample = [entry for _, entry in islice(_entries(source), SNIFF_ENTRIES)]
        return bool(sample) and all(_is_entry(entry) for entry in sample)

    def parse(self, source: Source) -> ParsedFile:
        """One run. Raises FormatError naming the JSON path of a wrong value."""
        path, skipped = source.path, Counter[str]()
        if isinstance(source, Document) and not isinstance(source.data, list):
            problem = "a list of LangChain messages or an object with 'messages'"
            data = expect(path, "$", source.data, dict, problem)
            if not _is_entry(data):
                expect(path, "$.messages", data.get("messages"), list, "a list of messages")
        messages, model = [], ""
        for where, entry in _entries(source):
            messages.append(_message(path, where, entry, skipped))
            if messages[-1].role == "assistant":
                model = _model(entry["data"]) or model
        if not messages:
            raise FormatError(path, "$", "expected at least one message, found none")
        run = Run(title_of(messages), tuple(messages), self.name, model)
        warnings = list(source.warnings) if isinstance(source, Lines) else []
        if skipped:
            kinds = ", ".join(f"{k} x{n}" for k, n in sorted(skipped.items()))
            warnings.append(f"{path}: skipped content blocks of types not modelled: {kinds}")
        return ParsedFile(self.name, (run,), tuple(warnings))


def _entries(source: Source) -> Iterator[tuple[str, Any]]:
    """Each message entry with the root of its JSON path (a one-line JSONL file is read
    as a document: its entry is the document)."""
    if isinstance(source, Lines):
        for record in source:
            yield f"line {record.line}, $", record.data
        return
    data, root = source.data, "$"
    if _is_entry(data):
        data = [data]
    elif isinstance(data, dict):
        data, root = data.get("messages"), "$.messages"
    for i, entry in enumerate(data if isinstance(data, list) else ()):
        yield f"{root}[{i}]", entry


def _is_entry(entry: Any) -> bool:
    data = entry.get("data") if isinstance(entry, dict) else None
    return isinstance(data, dict) and "content" in data and isinstance(entry.get("type"), str)


def _model(data: dict[str, Any]) -> str:
    meta = data.get("response_metadata") or {}
    name = meta.get("model_name") or meta.get("model") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def _message(path: str, where: str, entry: Any, skipped: Counter[str]) -> Message:
    """One message entry; content blocks of unknown types are counted in `skipped`."""
    expect(path, where, entry, dict, "a message object with 'type' and 'data'")
    data = expect(path, f"{where}.data", entry.get("data"), dict, "the message's data object")
    role = _role(path, where, entry.get("type"), data)
    content = data.get("content")
    if content is not None and not isinstance(content, str | list):
        expect(path, f"{where}.data.content", content, (str, list), "a string or a list")
    if role == "tool":
        key = "name" if entry["type"].lower().startswith("function") else "tool_call_id"
        call_id = expect(path, f"{where}.data.{key}", data.get(key), str, "the tool call id")
        result = ToolResultPart(call_id, text_of(content), data.get("status") == "error")
        return Message("tool", (result,), source=where)
    parts = _content(path, f"{where}.data.content", content, skipped)
    if role != "assistant":
        return Message(role, tuple(parts), source=where)
    extra = data.get("additional_kwargs")
    reasoning = extra.get("reasoning_content") if isinstance(extra, dict) else None
    thinking: list[Part] = [ThinkingPart(reasoning)] if isinstance(reasoning, str) else []
    parts = thinking + _with_calls(path, f"{where}.data", parts, data)
    usage = _usage(path, f"{where}.data.usage_metadata", data.get("usage_metadata"))
    return Message("assistant", tuple(parts), usage, source=where)


def _role(path: str, where: str, kind: Any, data: dict[str, Any]) -> Role:
    if not isinstance(kind, str):  # a list or object would not even be a dict key
        found = "nothing" if kind is None else type(kind).__name__
        raise FormatError(path, f"{where}.type", f"expected {TYPES_EXPECTED}, found {found}")
    if kind in CHAT_TYPES:
        role = data.get("role")
        if not isinstance(role, str) or role not in CHAT_ROLES:
            found = "nothing" if role is None else repr(role)
            problem = f"expected {CHAT_ROLES_EXPECTED}, found {found}"
            raise FormatError(path, f"{where}.data.role", problem)
        return CHAT_ROLES[role]
    if kind not in TYPES:
        found = "nothing" if kind is None else repr(kind)
        raise FormatError(path, f"{where}.type", f"expected {TYPES_EXPECTED}, found {found}")
    return TYPES[kind]


def _content(path: str, where: str, value: Any, skipped: Counter[str]) -> list[Part]:
    if isinstance(value, str) or not value:
        return [TextPart(value)] if value else []
    parts = (_block(path, f"{where}[{i}]", b, skipped) for i, b in enumerate(value))
    return [p for p in parts if p is not None]


def _block(path: str, where: str, data: Any, skipped: Counter[str]) -> Part | None:
    """One content block as a part; None (counted) for a type nothing here models."""
    if isinstance(data, str):
        return TextPart(data)
    expect(path, where, data, dict, "a content block object")
    kind = data.get("type")
    for reader in (_text_block, _call_block, _result_block):
        part = reader(path, where, kind, data)
        if part is not None:
            return part
    if kind in MEDIA or kind == "text-plain":
        return ImagePart(_media_type(data))
    skipped[str(kind)] += 1
    return None


def _string(path: str, where: str, data: dict[str, Any], key: str) -> str:
    return str(expect(path, f"{where}.{key}", data.get(key), str, "a string"))


def _text_block(path: str, where: str, kind: Any, data: dict[str, Any]) -> Part | None:
    """Text, refusal, thinking and reasoning blocks (a plain-text file with its text)."""
    if kind in ("text", "refusal"):
        return TextPart(_string(path, where, data, str(kind)))
    if kind == "text-plain" and isinstance(data.get("text"), str):
        return TextPart(data["text"])
    if kind == "thinking":
        return ThinkingPart(_string(path, where, data, "thinking"))
    if kind == "redacted_thinking":
        return ThinkingPart("")  # encrypted: its length says nothing about tokens
    if kind != "reasoning":
        return None
    summary = data.get("summary")  # OpenAI's Responses API: a list of summary texts
    if isinstance(summary, list):
        return ThinkingPart(text_of(summary))
    return ThinkingPart(_string(path, where, data, "reasoning") if "reasoning" in data else "")


def _call_block(path: str, where: str, kind: Any, data: dict[str, Any]) -> Part | None:
    """A tool-call block: LangChain's, Anthropic's or OpenAI Responses' (CALL_BLOCKS)."""
    if kind not in CALL_BLOCKS:
        return None
    id_key, arguments = CALL_BLOCKS[kind]
    call_id, name = _string(path, where, data, id_key), _string(path, where, data, "name")
    server = kind not in ("tool_call", "tool_use", "function_call")
    return ToolCallPart(call_id, name, arguments_text(data.get(arguments)), server)


def _result_block(path: str, where: str, kind: Any, data: dict[str, Any]) -> Part | None:
    """A tool result inside the content: Anthropic's, or a server-side one (RESULT_BLOCKS)."""
    if kind not in RESULT_BLOCKS:
        return None
    id_key, body = RESULT_BLOCKS[kind]
    error = data.get("is_error") is True or data.get("status") == "error"
    return ToolResultPart(_string(path, where, data, id_key), text_of(data.get(body)), error)


def _media_type(data: dict[str, Any]) -> str:
    """The media type a block names: ``mime_type``, an Anthropic ``source.media_type``
    or the type of a ``data:`` URL."""
    if isinstance(data.get("mime_type"), str):
        return str(data["mime_type"])
    source, image = data.get("source"), data.get("image_url")
    if isinstance(source, dict) and isinstance(source.get("media_type"), str):
        return str(source["media_type"])
    url = image.get("url") if isinstance(image, dict) else image
    url = url if isinstance(url, str) else data.get("url")
    if isinstance(url, str) and url.startswith("data:"):
        return url[5:].split(";")[0].split(",")[0]
    return ""


def _with_calls(path: str, where: str, parts: list[Part], data: dict[str, Any]) -> list[Part]:
    """`parts` with the message's tool calls merged in (see the module docstring)."""
    calls: list[ToolCallPart] = []
    for key in ("tool_calls", "invalid_tool_calls"):
        items = [] if data.get(key) is None else data[key]
        expect(path, f"{where}.{key}", items, list, "a list of tool calls")
        calls += [_call(path, f"{where}.{key}[{i}]", c, key[0] == "i") for i, c in enumerate(items)]
    by_id = {c.id: c for c in calls}
    merged = [by_id.pop(p.id, p) if isinstance(p, ToolCallPart) else p for p in parts]
    return merged + [c for c in calls if c.id in by_id]


def _call(path: str, where: str, data: Any, invalid: bool = False) -> ToolCallPart:
    """A ``tool_calls`` entry. An invalid one (its arguments did not parse) may lack its
    id and name, and keeps its raw argument text."""
    expect(path, where, data, dict, "a tool call object")
    call_id, name = data.get("id"), data.get("name")
    if invalid:
        call_id, name = call_id or "", name or ""
    expect(path, f"{where}.id", call_id, str, "the tool call's id string")
    expect(path, f"{where}.name", name, str, "the tool's name string")
    return ToolCallPart(call_id, name, arguments_text(data.get("args")))


def _usage(path: str, where: str, data: Any) -> Usage | None:
    """``usage_metadata``: input_tokens include the cache reads and writes."""
    if data is None:
        return None
    expect(path, where, data, dict, "a usage object")
    total = tokens(path, where, data, "input_tokens", required=True)
    details = data.get("input_token_details")
    inner = f"{where}.input_token_details"
    details = {} if details is None else expect(path, inner, details, dict, "an object")
    read = tokens(path, inner, details, "cache_read")
    write = tokens(path, inner, details, "cache_creation")
    if read + write > total:
        raise FormatError(path, where, "expected cache_read + cache_creation <= input_tokens")
    return Usage(total - read - write, read, write, tokens(path, where, data, "output_tokens"))
