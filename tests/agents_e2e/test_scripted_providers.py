"""The scripted provider servers (tests/doubles/scripted_*.py) speak each provider's wire protocol.

These doubles stand in for Anthropic, OpenAI and Gemini in the real-agent tests, so
their event sequences must be the providers' own: a real SDK that meets an event out
of order, a missing field or a wrong framing fails the agent in ways that look like
our bugs. Each test drives a server the way an agent does (a tool offered, then the
tool's result) and reads the stream as a client would.
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.doubles.scripted_anthropic import ScriptedAnthropic
from tests.doubles.scripted_common import Work, fill_schema, plan_tool_call
from tests.doubles.scripted_gemini import ScriptedGemini
from tests.doubles.scripted_openai import ScriptedOpenAI

WORK = Work.hello_world()
BASH_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}, "description": {"type": "string"},
                                                "timeout": {"type": "number"}}, "required": ["command"]}


def events(text: str) -> list[tuple[str | None, str]]:
    """SSE text → [(event name or None, data)], blank-line separated (LF or CRLF)."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        name = next((line[7:] for line in block.split("\n") if line.startswith("event: ")), None)
        data = "\n".join(line[6:] for line in block.split("\n") if line.startswith("data: "))
        out.append((name, data))
    return out


def test_tool_arguments_come_from_the_offered_tool_schema() -> None:
    codex = plan_tool_call([("shell", {"type": "object", "properties": {"command": {"type": "array"}},
                                       "required": ["command"]})], WORK)
    assert codex.arguments == {"command": ["bash", "-lc", WORK.command]}
    claude = plan_tool_call([("Read", {}), ("mcp__acp__Bash", BASH_SCHEMA)], WORK)
    assert (claude.name, claude.arguments) == ("mcp__acp__Bash", {"command": WORK.command})
    editor = plan_tool_call([("write_file", {"type": "object", "properties": {
        "file_path": {"type": "string"}, "content": {"type": "string"}}, "required": ["file_path", "content"]})], WORK)
    assert editor.arguments == {"file_path": "/app/hello.txt", "content": "Hello, world!\n"}
    assert plan_tool_call([("web_search", {})], WORK) is None
    assert fill_schema({"type": "object", "properties": {"next_speaker": {"enum": ["model", "user"]},
                                                         "reasoning": {"type": "string"}},
                        "required": ["reasoning", "next_speaker"]}) == {"reasoning": "reasoning", "next_speaker": "user"}


def test_anthropic_messages_stream_is_the_providers_event_sequence() -> None:
    tools = [{"name": "Bash", "description": "run", "input_schema": BASH_SCHEMA}]
    ask = {"model": "claude-haiku-4-5", "max_tokens": 100, "stream": True, "tools": tools,
           "messages": [{"role": "user", "content": "make hello.txt"}]}
    with ScriptedAnthropic() as server, httpx.Client(base_url=server.url) as client:
        first = events(client.post("/v1/messages?beta=true", json=ask).text)
        names = [name for name, _ in first]
        assert names == ["message_start", "ping",
                         "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
                         "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta",
                         "content_block_stop", "message_delta", "message_stop"]
        payloads = [json.loads(data) for _, data in first]
        assert all(p["type"] == name for p, name in zip(payloads, names, strict=True))
        tool_block = payloads[6]["content_block"]
        assert tool_block["type"] == "tool_use" and tool_block["name"] == "Bash" and tool_block["input"] == {}
        partial = "".join(p["delta"]["partial_json"] for p in payloads[7:10])
        assert json.loads(partial) == {"command": WORK.command}
        assert payloads[11]["delta"]["stop_reason"] == "tool_use" and payloads[11]["usage"]["output_tokens"] > 0
        assert payloads[0]["message"]["usage"]["input_tokens"] > 0

        result = [{"role": "assistant", "content": [{"type": "tool_use", "id": tool_block["id"], "name": "Bash",
                                                     "input": {"command": WORK.command}}]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_block["id"],
                                                "content": ""}]}]
        final = client.post("/v1/messages", json={**ask, "stream": False, "messages": ask["messages"] + result}).json()
        assert final["stop_reason"] == "end_turn" and final["content"][0]["type"] == "text"
        side = client.post("/v1/messages", json={"model": "m", "max_tokens": 9, "messages": ask["messages"]}).json()
        assert side["stop_reason"] == "end_turn"
        assert client.post("/v1/messages/count_tokens", json=ask).json()["input_tokens"] > 0
        assert client.get("/v1/models").json()["data"][0]["type"] == "model"
    assert server.kinds() == ["tool_call", "final", "side", "count", "models"]


def test_openai_chat_stream_sends_tool_call_deltas_then_usage_then_done() -> None:
    tools = [{"type": "function", "function": {"name": "bash", "parameters": BASH_SCHEMA}}]
    ask = {"model": "gpt-5.2", "stream": True, "stream_options": {"include_usage": True}, "tools": tools,
           "messages": [{"role": "user", "content": "make hello.txt"}]}
    with ScriptedOpenAI() as server, httpx.Client(base_url=server.url) as client:
        stream = events(client.post("/v1/chat/completions", json=ask).text)
        assert stream[-1] == (None, "[DONE]")
        chunks = [json.loads(data) for _, data in stream[:-1]]
        assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        first_call = deltas[0]["tool_calls"][0]
        assert deltas[0]["role"] == "assistant" and first_call["id"] and first_call["function"]["name"] == "bash"
        arguments = "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas if d.get("tool_calls"))
        assert json.loads(arguments) == {"command": WORK.command}
        assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
        done = ask["messages"] + [
            {"role": "assistant", "tool_calls": [{"id": first_call["id"], "type": "function",
                                                  "function": {"name": "bash", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": first_call["id"], "content": ""}]
        final = client.post("/v1/chat/completions", json={**ask, "stream": False, "messages": done}).json()
        assert final["choices"][0]["finish_reason"] == "stop" and final["choices"][0]["message"]["content"]
    assert server.kinds() == ["tool_call", "final"]


def test_openai_responses_stream_is_the_providers_event_sequence() -> None:
    tools = [{"type": "function", "name": "exec_command", "parameters": {
        "type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}]
    ask = {"model": "gpt-5.2", "stream": True, "tools": tools,
           "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}
    with ScriptedOpenAI() as server, httpx.Client(base_url=server.url) as client:
        stream = events(client.post("/v1/responses", json=ask).text)
        payloads = [json.loads(data) for _, data in stream]
        names = [p["type"] for p in payloads]
        assert names == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.function_call_arguments.delta", "response.function_call_arguments.delta",
                         "response.function_call_arguments.done", "response.output_item.done", "response.completed"]
        assert [name for name, _ in stream] == names
        assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
        item = payloads[-1]["response"]["output"][0]
        assert item["type"] == "function_call" and json.loads(item["arguments"]) == {"cmd": WORK.command}
        assert payloads[-1]["response"]["usage"]["input_tokens"] > 0
        follow = ask["input"] + [item, {"type": "function_call_output", "call_id": item["call_id"], "output": ""}]
        text = [json.loads(d) for _, d in events(client.post("/v1/responses", json={**ask, "input": follow}).text)]
        assert [p["type"] for p in text] == [
            "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
            "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
            "response.content_part.done", "response.output_item.done", "response.completed"]
        assert text[-1]["response"]["output"][0]["content"][0]["text"] == WORK.summary
    assert server.kinds() == ["tool_call", "final"]


@pytest.mark.parametrize("alt_sse", [True, False])
def test_gemini_streams_sse_chunks_or_a_json_array(alt_sse: bool) -> None:
    tools = [{"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": BASH_SCHEMA}]}]
    ask = {"contents": [{"role": "user", "parts": [{"text": "make hello.txt"}]}], "tools": tools}
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent" + ("?alt=sse" if alt_sse else "")
    with ScriptedGemini() as server, httpx.Client(base_url=server.url) as client:
        reply = client.post(path, json=ask)
        if alt_sse:
            assert "\r\n\r\n" in reply.text and "[DONE]" not in reply.text
            chunks = [json.loads(data) for _, data in events(reply.text)]
        else:
            chunks = reply.json()
        parts = [part for c in chunks for part in c["candidates"][0]["content"]["parts"]]
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        assert calls == [{"name": "run_shell_command", "args": {"command": WORK.command}}]
        assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
        assert chunks[-1]["usageMetadata"]["candidatesTokenCount"] > 0
        done = ask["contents"] + [{"role": "model", "parts": [{"functionCall": calls[0]}]},
                                  {"role": "user", "parts": [{"functionResponse": {
                                      "name": "run_shell_command", "response": {"output": ""}}}]}]
        final = client.post("/v1beta/models/gemini-2.5-flash:generateContent", json={**ask, "contents": done}).json()
        assert final["candidates"][0]["content"]["parts"] == [{"text": WORK.summary}]
        check = client.post("/v1beta/models/gemini-2.5-flash:generateContent", json={
            "contents": ask["contents"], "generationConfig": {"responseMimeType": "application/json",
                                                              "responseJsonSchema": {
                "type": "object", "properties": {"next_speaker": {"type": "string", "enum": ["user", "model"]}},
                "required": ["next_speaker"]}}}).json()
        assert json.loads(check["candidates"][0]["content"]["parts"][0]["text"]) == {"next_speaker": "user"}
        assert client.post("/v1beta/models/gemini-2.5-flash:countTokens", json=ask).json()["totalTokens"] > 0
    assert server.kinds() == ["tool_call", "final", "side", "count"]
