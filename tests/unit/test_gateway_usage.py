"""Usage per API and SSE reassembly of streamed responses (benchflow.gateway.usage / streams)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from benchflow.gateway.streams import SSEParser, StreamAssembler
from benchflow.gateway.usage import (
    CHAT,
    GEMINI,
    MESSAGES,
    RESPONSES,
    CallUsage,
    model_from_body,
    usage_from_body,
)


def sse(data, event=None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n").encode()


def test_chat_usage_splits_cached_tokens_out_of_prompt():
    usage = usage_from_body(CHAT, {"usage": {"prompt_tokens": 100, "completion_tokens": 20,
                                             "prompt_tokens_details": {"cached_tokens": 30},
                                             "completion_tokens_details": {"reasoning_tokens": 5}}})
    assert usage == CallUsage(input_tokens=70, output_tokens=20, cache_read_tokens=30, reasoning_tokens=5)
    assert usage.total == 120


def test_responses_usage():
    usage = usage_from_body(RESPONSES, {"usage": {"input_tokens": 50, "output_tokens": 9,
                                                  "input_tokens_details": {"cached_tokens": 40}}})
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (10, 40, 9)


def test_anthropic_usage_keeps_cache_separate():
    usage = usage_from_body(MESSAGES, {"usage": {"input_tokens": 4, "output_tokens": 8, "cache_read_input_tokens": 100,
                                                 "cache_creation_input_tokens": 16}})
    assert usage == CallUsage(input_tokens=4, output_tokens=8, cache_read_tokens=100, cache_creation_tokens=16)
    assert usage.total == 128


def test_gemini_usage_counts_thoughts_as_output():
    usage = usage_from_body(GEMINI, {"usageMetadata": {"promptTokenCount": 30, "cachedContentTokenCount": 10,
                                                       "candidatesTokenCount": 5, "thoughtsTokenCount": 7}})
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens, usage.reasoning_tokens) == (20, 10, 12, 7)


def test_missing_or_malformed_usage_is_none():
    assert usage_from_body(CHAT, {"choices": []}) is None
    assert usage_from_body(MESSAGES, {"usage": "lots"}) is None
    assert usage_from_body(CHAT, "not a dict") is None
    assert usage_from_body(None, {"usage": {"prompt_tokens": 3}}) is None


def test_model_from_body():
    assert model_from_body({"model": "gpt-4o-2024-08-06"}) == "gpt-4o-2024-08-06"
    assert model_from_body({"modelVersion": "gemini-2.5-flash"}) == "gemini-2.5-flash"
    assert model_from_body({"response": {"model": "gpt-5"}}) == "gpt-5"
    assert model_from_body([1]) is None


CHAT_STREAM = b"".join([
    sse({"id": "c1", "model": "gpt-4o", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
    sse({"id": "c1", "choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
    sse({"id": "c1", "choices": [{"index": 0, "delta": {"content": "lo"}}]}),
    sse({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "bash", "arguments": ""}}]}}]}),
    sse({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": '{"cmd": '}}]}}]}),
    sse({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": '"ls"}'}}]}}]}),
    sse({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    sse({"id": "c1", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 6}}),
    sse("[DONE]"),
])


def test_chat_stream_reassembles_text_tool_calls_and_usage():
    assembler = StreamAssembler(CHAT)
    assembler.feed(CHAT_STREAM)
    body = assembler.body()
    choice = body["choices"][0]
    assert choice["message"]["content"] == "Hello"
    assert choice["message"]["tool_calls"] == [{"id": "call_1", "type": "function",
                                                "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}]
    assert choice["finish_reason"] == "tool_calls"
    assert body["model"] == "gpt-4o"
    assert usage_from_body(CHAT, body) == CallUsage(input_tokens=12, output_tokens=6)


@given(st.lists(st.integers(min_value=1, max_value=len(CHAT_STREAM) - 1), max_size=12))
def test_chat_stream_reassembly_does_not_depend_on_chunking(cuts):
    points = sorted(set(cuts))
    pieces = [CHAT_STREAM[a:b] for a, b in zip([0, *points], [*points, len(CHAT_STREAM)], strict=True)]
    assembler = StreamAssembler(CHAT)
    for piece in pieces:
        assembler.feed(piece)
    whole = StreamAssembler(CHAT)
    whole.feed(CHAT_STREAM)
    assert assembler.body() == whole.body()
    assert assembler.n_events == 8


def test_sse_parser_handles_crlf_and_multiline_data():
    parser = SSEParser()
    events = parser.feed(b"event: ping\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n: comment\n\ndata: x")
    assert events == [("ping", '{"a":\n1}')]
    assert parser.feed(b"\n\n") == [("message", "x")]


def test_anthropic_stream_reassembles_blocks_and_final_usage():
    stream = b"".join([
        sse({"type": "message_start", "message": {"id": "m1", "model": "claude-x", "role": "assistant", "content": [],
                                                  "usage": {"input_tokens": 9, "cache_read_input_tokens": 4,
                                                            "output_tokens": 1}}}, "message_start"),
        sse({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        sse({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
        sse({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}}),
        sse({"type": "content_block_start", "index": 1,
             "content_block": {"type": "tool_use", "id": "tu1", "name": "bash", "input": {}}}),
        sse({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"c'}}),
        sse({"type": "content_block_delta", "index": 1,
             "delta": {"type": "input_json_delta", "partial_json": '": 1}'}}),
        sse({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
        sse({"type": "message_stop"}),
    ])
    assembler = StreamAssembler(MESSAGES)
    assembler.feed(stream)
    body = assembler.body()
    assert body["content"] == [{"type": "thinking", "thinking": "hmm", "signature": "sig"},
                               {"type": "tool_use", "id": "tu1", "name": "bash", "input": {"c": 1}}]
    assert body["stop_reason"] == "tool_use"
    assert usage_from_body(MESSAGES, body) == CallUsage(input_tokens=9, output_tokens=30, cache_read_tokens=4)


def test_responses_stream_takes_the_completed_response():
    final = {"id": "r1", "model": "gpt-5", "output": [{"type": "message", "content": [{"type": "output_text",
                                                                                         "text": "hi"}]}],
             "usage": {"input_tokens": 3, "output_tokens": 2}}
    assembler = StreamAssembler(RESPONSES)
    assembler.feed(sse({"type": "response.created", "response": {"id": "r1", "output": []}}, "response.created"))
    assembler.feed(sse({"type": "response.output_text.delta", "delta": "hi"}))
    assembler.feed(sse({"type": "response.completed", "response": final}, "response.completed"))
    assert assembler.body() == final


def test_responses_stream_cut_short_keeps_the_text_seen():
    assembler = StreamAssembler(RESPONSES)
    assembler.feed(sse({"type": "response.created", "response": {"id": "r1", "output": []}}))
    assembler.feed(sse({"type": "response.output_text.delta", "delta": "par"}))
    assembler.feed(sse({"type": "response.output_text.delta", "delta": "tial"}))
    body = assembler.body()
    assert body["output"][0]["content"][0]["text"] == "partial"
    assert usage_from_body(RESPONSES, body) is None


def test_gemini_stream_joins_text_and_keeps_last_usage():
    assembler = StreamAssembler(GEMINI)
    assembler.feed(sse({"candidates": [{"content": {"parts": [{"text": "a"}]}}],
                        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1}}))
    assembler.feed(sse({"candidates": [{"content": {"parts": [{"text": "b"}]}, "finishReason": "STOP"}],
                        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2}}))
    body = assembler.body()
    assert body["candidates"][0]["content"]["parts"] == [{"text": "ab"}]
    assert body["candidates"][0]["finishReason"] == "STOP"
    assert usage_from_body(GEMINI, body) == CallUsage(input_tokens=5, output_tokens=2)
