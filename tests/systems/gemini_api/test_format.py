"""Gemini API bodies as the capture proxy reads them, one case a line."""

from __future__ import annotations

import json

import pytest

from contextsim.ingest.base import FormatError
from contextsim.model import Usage
from contextsim.systems.gemini_api.format import GeminiDialect, streamed_response

DIALECT = GeminiDialect()


@pytest.mark.parametrize(
    "usage, expected",
    [
        ({"promptTokenCount": 100}, Usage(100, 0, 0, 0)),
        ({"promptTokenCount": 100, "cachedContentTokenCount": 60}, Usage(40, 60, 0, 0)),
        (
            {"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 7},
            Usage(10, 0, 0, 12),
        ),
    ],
)
def test_usage_counts_the_cached_tokens_apart_and_thoughts_as_output(usage, expected):
    message, _ = DIALECT.response("f", "$", {"candidates": [], "usageMetadata": usage})
    assert message is not None and message.usage == expected


@pytest.mark.parametrize(
    "body, where",
    [
        ({}, "$.contents"),
        ({"contents": [{"role": "system", "parts": []}]}, "$.contents[0].role"),
        ({"contents": [{"role": "user", "parts": "hi"}]}, "$.contents[0].parts"),
        (
            {"contents": [], "tools": [{"functionDeclarations": {}}]},
            "$.tools[0].functionDeclarations",
        ),
    ],
)
def test_a_bad_request_names_where(body, where):
    with pytest.raises(FormatError) as found:
        DIALECT.request("f", "$", body)
    assert found.value.where == where


def test_a_function_response_without_an_id_answers_the_oldest_open_call_of_its_name():
    body = {
        "contents": [
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}] * 2},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}] * 2},
        ]
    }
    messages, _ = DIALECT.request("f", "$", body)
    calls = [p.id for p in messages[0].parts]
    answers = [p.call_id for p in messages[1].parts]
    assert answers == calls and len(set(calls)) == 2


def test_a_stream_is_its_chunks_parts_joined_and_its_last_usage():
    chunks = [
        {"candidates": [{"content": {"parts": [{"text": "Hel", "thought": True}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "lo"}]}}]},
        {"candidates": [{"content": {"parts": [{"text": " there"}]}}]},
        {
            "candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}}],
            "usageMetadata": {"promptTokenCount": 3},
            "modelVersion": "gemini-x",
        },
    ]
    text = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks)
    whole = streamed_response(text)
    parts = whole["candidates"][0]["content"]["parts"]
    assert parts == [
        {"text": "Hel", "thought": True},
        {"text": "lo there"},
        {"functionCall": {"name": "f", "args": {}}},
    ]
    assert whole["usageMetadata"] == {"promptTokenCount": 3} and whole["modelVersion"] == "gemini-x"
    with pytest.raises(ValueError):
        streamed_response("")
