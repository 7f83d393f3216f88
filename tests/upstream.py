"""A fake Anthropic and OpenAI upstream on loopback, answering like the real APIs
(Messages, Chat Completions, Responses; streamed and not; errors on request), and
`serving`, which runs any ASGI application with uvicorn in a thread for a test.

A test scripts what the model says (`Upstream.script`): a reply is text, or tool calls
(name, JSON arguments). Usage is made from the request's size so that it grows with
the conversation: input = bytes of the request body // 4. An `x-fake-status` request
header makes the upstream answer that status with the provider's error body instead;
`x-fake-cut` makes it drop the connection after that many bytes of a stream;
`x-fake-words` makes the reply that many words long and `x-fake-delay` waits that many
seconds between two pieces of a stream (a slow model, for the benchmarks).

Everything the upstream received (headers and body) and sent (the exact bytes) is kept
in `Upstream.seen` for the test to compare.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: bytes
    sent: bytes = b""


@dataclass
class Reply:
    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class Upstream:
    """The fake provider (an ASGI application)."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.replies: list[Reply] = []
        self.count = 0

    def script(self, *replies: Reply | str) -> None:
        self.replies.extend(r if isinstance(r, Reply) else Reply(r) for r in replies)

    def _next(self) -> Reply:
        self.count += 1
        return self.replies.pop(0) if self.replies else Reply(f"answer {self.count}")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        seen = Seen(scope["path"], headers, body)
        self.seen.append(seen)
        status, content_type, chunks = self._answer(scope["path"], headers, body)
        cut = int(headers.get("x-fake-cut", 0))
        delay = float(headers.get("x-fake-delay", 0))
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", content_type.encode()), (b"x-fake", b"1")],
            }
        )
        for chunk in chunks:
            if cut and len(seen.sent) + len(chunk) > cut:
                piece = chunk[: cut - len(seen.sent)]
                seen.sent += piece
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                raise RuntimeError("fake upstream cut the stream")  # uvicorn drops the connection
            seen.sent += chunk
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(delay)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _answer(
        self, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, str, list[bytes]]:
        forced = int(headers.get("x-fake-status", 0))
        anthropic = "/messages" in path
        if forced:
            error = {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "fake failure"},
            }
            if not anthropic:
                error = {"error": {"message": "fake failure", "type": "server_error", "code": None}}
            return forced, "application/json", [json.dumps(error).encode()]
        if path.endswith("/models"):
            return 200, "application/json", [json.dumps({"data": [{"id": "fake-model"}]}).encode()]
        if path.endswith("/count_tokens"):
            return 200, "application/json", [json.dumps({"input_tokens": len(body) // 4}).encode()]
        data = json.loads(body)
        reply, used = self._next(), len(body) // 4
        if ":generateContent" in path or ":streamGenerateContent" in path:
            if headers.get("x-fake-words"):
                reply = Reply(" ".join(["word"] * int(headers["x-fake-words"])))
            return _gemini(path, reply, used, ":streamGenerateContent" in path)
        if headers.get("x-fake-words"):
            reply = Reply(" ".join(["word"] * int(headers["x-fake-words"])))
        stream = bool(data.get("stream"))
        if anthropic:
            return _anthropic(data, reply, used, stream)
        if path.endswith("/responses"):
            return _responses(data, reply, used, stream)
        return _chat(data, reply, used, stream)


def _gemini(path: str, reply: Reply, used: int, stream: bool) -> tuple[int, str, list[bytes]]:
    """Gemini's generateContent answer (usage: prompt includes the cached tokens), or its
    streamGenerateContent?alt=sse chunks (the usage in the last)."""
    model = path.rsplit("/models/", 1)[-1].split(":", 1)[0]
    calls = [{"functionCall": {"name": n, "args": a}} for n, a in reply.calls]
    usage = {
        "promptTokenCount": used,
        "cachedContentTokenCount": 7,
        "candidatesTokenCount": len(reply.text) // 4 + 1,
        "totalTokenCount": used + len(reply.text) // 4 + 1,
    }

    def response(parts: list[dict[str, Any]], last: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
            "modelVersion": model,
        }
        if last:
            out["candidates"][0]["finishReason"] = "STOP"
            out["usageMetadata"] = usage
        return out

    if not stream:
        text = [{"text": reply.text}] if reply.text else []
        return 200, "application/json", [json.dumps(response(text + calls, True)).encode()]
    pieces = [{"text": p} for p in _pieces(reply.text)] if reply.text else []
    chunks = [response([p], False) for p in pieces] + [response(calls, True)]
    return 200, "text/event-stream", [f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks]


def _sse(events: list[tuple[str, dict[str, Any]]]) -> list[bytes]:
    return [
        (f"event: {name}\n" if name else "").encode() + f"data: {json.dumps(data)}\n\n".encode()
        for name, data in events
    ]


def _anthropic(
    data: dict[str, Any], reply: Reply, used: int, stream: bool
) -> tuple[int, str, list[bytes]]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [
        {"type": "tool_use", "id": f"toolu_{i}_{used}", "name": name, "input": args}
        for i, (name, args) in enumerate(reply.calls)
    ]
    usage = {"input_tokens": used, "cache_read_input_tokens": 7, "cache_creation_input_tokens": 3}
    out = len(json.dumps(content)) // 4
    message = {
        "id": f"msg_{used}",
        "type": "message",
        "role": "assistant",
        "model": data["model"],
        "content": content,
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": out},
    }
    if not stream:
        return 200, "application/json", [json.dumps(message).encode()]
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    **message,
                    "content": [],
                    "stop_reason": None,
                    "usage": {**usage, "output_tokens": 1},
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    for i, block in enumerate(content):
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            for piece in _pieces(block["text"]):
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "text_delta", "text": piece},
                        },
                    )
                )
        else:
            start = {**block, "input": {}}
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": start},
                )
            )
            for piece in _pieces(json.dumps(block["input"])):
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                    )
                )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": out},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return 200, "text/event-stream", _sse(events)


def _pieces(text: str) -> list[str]:
    return [text[i : i + 7] for i in range(0, len(text), 7)] or [""]


def _chat(
    data: dict[str, Any], reply: Reply, used: int, stream: bool
) -> tuple[int, str, list[bytes]]:
    calls = [
        {
            "id": f"call_{i}_{used}",
            "type": "function",
            "function": {"name": n, "arguments": json.dumps(a)},
        }
        for i, (n, a) in enumerate(reply.calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if calls:
        message["tool_calls"] = calls
    out = len(json.dumps(message)) // 4
    usage = {
        "prompt_tokens": used,
        "completion_tokens": out,
        "total_tokens": used + out,
        "prompt_tokens_details": {"cached_tokens": 5},
    }
    head = {"id": f"chatcmpl-{used}", "created": 1700000000, "model": data["model"]}
    finish = "tool_calls" if calls else "stop"
    if not stream:
        body = {
            **head,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
        return 200, "application/json", [json.dumps(body).encode()]
    chunk = {**head, "object": "chat.completion.chunk"}
    events = [
        (
            "",
            {
                **chunk,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "finish_reason": None,
                    }
                ],
            },
        )
    ]
    events += (
        [
            (
                "",
                {
                    **chunk,
                    "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}],
                },
            )
            for p in _pieces(reply.text)
        ]
        if reply.text
        else []
    )
    for i, call in enumerate(calls):
        first = {
            "index": i,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        events.append(
            (
                "",
                {
                    **chunk,
                    "choices": [
                        {"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}
                    ],
                },
            )
        )
        for piece in _pieces(call["function"]["arguments"]):
            events.append(
                (
                    "",
                    {
                        **chunk,
                        "choices": [
                            {
                                "index": 0,
                                "delta": {
                                    "tool_calls": [{"index": i, "function": {"arguments": piece}}]
                                },
                                "finish_reason": None,
                            }
                        ],
                    },
                )
            )
    events.append(("", {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    if (data.get("stream_options") or {}).get("include_usage"):
        events.append(("", {**chunk, "choices": [], "usage": usage}))
    return 200, "text/event-stream", [*_sse(events), b"data: [DONE]\n\n"]


def _responses(
    data: dict[str, Any], reply: Reply, used: int, stream: bool
) -> tuple[int, str, list[bytes]]:
    output: list[dict[str, Any]] = []
    if reply.text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{used}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    output += [
        {
            "type": "function_call",
            "id": f"fc_{i}_{used}",
            "call_id": f"call_{i}_{used}",
            "name": n,
            "arguments": json.dumps(a),
            "status": "completed",
        }
        for i, (n, a) in enumerate(reply.calls)
    ]
    out = len(json.dumps(output)) // 4
    body = {
        "id": f"resp_{used}",
        "object": "response",
        "created_at": 1700000000,
        "status": "completed",
        "model": data["model"],
        "output": output,
        "usage": {
            "input_tokens": used,
            "input_tokens_details": {"cached_tokens": 4},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": used + out,
        },
    }
    if not stream:
        return 200, "application/json", [json.dumps(body).encode()]
    pending = {**body, "status": "in_progress", "output": [], "usage": None}
    events = [
        (
            "response.created",
            {"type": "response.created", "sequence_number": 0, "response": pending},
        ),
        (
            "response.completed",
            {"type": "response.completed", "sequence_number": 1, "response": body},
        ),
    ]
    return 200, "text/event-stream", _sse(events)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve the ASGI `app` with uvicorn on a free loopback port in a thread, for the
    block; yields its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        threading.Event().wait(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
