"""TEST DOUBLE: a scripted OpenAI server, Chat Completions and Responses (the rule is in ``scripted_common``).

``POST /v1/chat/completions``: JSON, or SSE chunks (``chat.completion.chunk``: the role,
then ``tool_calls`` deltas (id and name first, then the arguments in pieces) or content
deltas, a last chunk with ``finish_reason``, a usage chunk with no choices when
``stream_options.include_usage`` asks for it, then ``data: [DONE]``).

``POST /v1/responses``: JSON, or SSE with ``sequence_number``s: ``response.created``,
``response.in_progress``, per output item ``response.output_item.added`` then
``response.function_call_arguments.delta``/``.done`` (a ``function_call``) or
``response.content_part.added``, ``response.output_text.delta``/``.done``,
``response.content_part.done`` (a ``message``), ``response.output_item.done``, and
``response.completed`` carrying the whole response with its usage (no ``[DONE]``).

``GET /v1/models`` lists two models. Any other path answers 404 with the API's error body.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.doubles.scripted_common import (
    Call,
    ScriptedServer,
    ToolCall,
    approx_tokens,
    fill_schema,
    grade,
    plan_tool_call,
    sse,
)

SIDE_TEXT = "Hello world file"


def _side_text(schema: dict[str, Any] | None, json_mode: bool) -> str:
    if schema:
        return json.dumps(fill_schema(schema, SIDE_TEXT))
    return json.dumps({"reasoning": "The task is done.", "next_speaker": "user"}) if json_mode else SIDE_TEXT


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    content = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
    if isinstance(content, list):
        return "".join(str(part.get("text") or "") for part in content if isinstance(part, dict))
    return str(content or "")


class ScriptedOpenAI(ScriptedServer):
    """OpenAI Chat Completions and Responses, scripted per conversation."""

    def routes(self) -> list:
        return [Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/{rest:path}", self._other, methods=["GET", "POST", "PUT", "DELETE"])]

    async def _other(self, request: Request) -> Response:
        self.record(Call(request.url.path, "other", {}))
        return JSONResponse({"error": {"message": f"Unknown request URL: {request.url.path}",
                                       "type": "invalid_request_error", "param": None, "code": "unknown_url"}},
                            status_code=404)

    async def _models(self, request: Request) -> Response:
        self.record(Call(request.url.path, "models", {}))
        return JSONResponse({"object": "list", "data": [
            {"id": m, "object": "model", "created": 1700000000, "owned_by": "openai"}
            for m in ("gpt-4o-mini", "gpt-5-codex")]})

    # --- Chat Completions -------------------------------------------------------------------
    def _chat_plan(self, body: dict[str, Any]) -> tuple[str, ToolCall | None, str]:
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":  # structured output: a side call whatever tools it lists
            return "side", None, _side_text((fmt.get("json_schema") or {}).get("schema"), True)
        messages = body.get("messages") or []
        done = any(m.get("role") == "tool" for m in messages)
        tools = [((t.get("function") or {}).get("name", ""), (t.get("function") or {}).get("parameters") or {})
                 for t in body.get("tools") or [] if t.get("type", "function") == "function"]
        call = None if done else plan_tool_call(tools, self.work)
        if call:
            return "tool_call", call, ""
        if done:
            return "final", None, self.work.summary
        verdict = None if tools else grade(_last_user_text(messages))
        if verdict is not None:
            return "verdict", None, verdict
        return "side", None, _side_text(None, fmt.get("type") == "json_object")

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        kind, call, text = self._chat_plan(body)
        model, stream = str(body.get("model", "gpt")), bool(body.get("stream"))
        self.record(Call(request.url.path, kind, body, model=model, stream=stream, tool=call,
                         authorization=request.headers.get("authorization")))
        prompt, output = approx_tokens(body.get("messages")), approx_tokens([text, call and call.arguments])
        usage = {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output,
                 "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                 "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}}
        base = {"id": "chatcmpl-" + uuid.uuid4().hex[:24], "created": int(time.time()), "model": model,
                "system_fingerprint": "fp_scripted"}
        call_id = "call_" + uuid.uuid4().hex[:24]
        finish = "tool_calls" if call else "stop"
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": None if call else text, "refusal": None}
            if call:
                message["tool_calls"] = [{"id": call_id, "type": "function", "function": {
                    "name": call.name, "arguments": json.dumps(call.arguments)}}]
            return JSONResponse({**base, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}]})
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            return sse({**base, "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]})

        async def events():
            if call:
                yield chunk({"role": "assistant", "content": None, "tool_calls": [
                    {"index": 0, "id": call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}]})
                args = json.dumps(call.arguments)
                for part in (args[: len(args) // 2], args[len(args) // 2:]):
                    yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
            else:
                yield chunk({"role": "assistant", "content": "", "refusal": None})
                for part in (text[: len(text) // 2], text[len(text) // 2:]):
                    yield chunk({"content": part})
            yield chunk({}, finish)
            if include_usage:
                yield sse({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
            yield sse("[DONE]")

        return StreamingResponse(events(), media_type="text/event-stream")

    # --- Responses -------------------------------------------------------------------------------
    def _responses_plan(self, body: dict[str, Any]) -> tuple[str, ToolCall | None, str]:
        fmt = (body.get("text") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":  # structured output: a side call whatever tools it lists
            return "side", None, _side_text(fmt.get("schema"), True)
        items = body.get("input") if isinstance(body.get("input"), list) else []
        done = any(isinstance(i, dict) and str(i.get("type", "")).endswith("call_output") for i in items)
        tools: list[tuple[str, dict[str, Any]]] = []
        for tool in body.get("tools") or []:
            if tool.get("type") == "function":
                tools.append((tool.get("name", ""), tool.get("parameters") or {}))
            elif tool.get("type") == "local_shell":
                tools.append(("local_shell", {"properties": {"command": {"type": "array"}}}))
        call = None if done else plan_tool_call(tools, self.work)
        if call:
            if call.name == "local_shell":
                call.kind = "local_shell"
            return "tool_call", call, ""
        if done:
            return "final", None, self.work.summary
        return "side", None, _side_text(None, fmt.get("type") == "json_object")

    async def _responses(self, request: Request) -> Response:
        body = await request.json()
        kind, call, text = self._responses_plan(body)
        model, stream = str(body.get("model", "gpt")), bool(body.get("stream"))
        self.record(Call(request.url.path, kind, body, model=model, stream=stream, tool=call))
        prompt, output = approx_tokens(body.get("input")), approx_tokens([text, call and call.arguments])
        usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": prompt + output}
        if call and call.kind == "local_shell":
            item: dict[str, Any] = {"type": "local_shell_call", "id": "lsh_" + uuid.uuid4().hex[:24],
                                    "call_id": "call_" + uuid.uuid4().hex[:24], "status": "completed",
                                    "action": {"type": "exec", "command": call.arguments["command"], "env": {}}}
        elif call:
            item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:24], "status": "completed",
                    "call_id": "call_" + uuid.uuid4().hex[:24], "name": call.name,
                    "arguments": json.dumps(call.arguments)}
        else:
            item = {"type": "message", "id": "msg_" + uuid.uuid4().hex[:24], "status": "completed",
                    "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": [],
                                                      "logprobs": []}]}
        done = {"id": "resp_" + uuid.uuid4().hex[:24], "object": "response", "created_at": int(time.time()),
                "status": "completed", "error": None, "incomplete_details": None, "model": model,
                "output": [item], "parallel_tool_calls": True, "tool_choice": body.get("tool_choice", "auto"),
                "tools": body.get("tools") or [], "usage": usage}
        if not stream:
            return JSONResponse(done)
        return StreamingResponse(self._response_events(done, item), media_type="text/event-stream")

    async def _response_events(self, done: dict[str, Any], item: dict[str, Any]):
        seq = iter(range(1_000_000))

        def event(kind: str, **fields: Any) -> bytes:
            return sse({"type": kind, "sequence_number": next(seq), **fields}, kind)

        pending = {**done, "status": "in_progress", "output": [], "usage": None}
        yield event("response.created", response=pending)
        yield event("response.in_progress", response=pending)
        ids = {"item_id": item["id"], "output_index": 0}
        if item["type"] == "function_call":
            yield event("response.output_item.added", output_index=0,
                        item={**item, "status": "in_progress", "arguments": ""})
            args = item["arguments"]
            for part in (args[: len(args) // 2], args[len(args) // 2:]):
                yield event("response.function_call_arguments.delta", **ids, delta=part)
            yield event("response.function_call_arguments.done", **ids, arguments=args)
        elif item["type"] == "message":
            part = item["content"][0]
            yield event("response.output_item.added", output_index=0,
                        item={**item, "status": "in_progress", "content": []})
            yield event("response.content_part.added", **ids, content_index=0,
                        part={**part, "text": ""})
            text = part["text"]
            for piece in (text[: len(text) // 2], text[len(text) // 2:]):
                yield event("response.output_text.delta", **ids, content_index=0, delta=piece, logprobs=[])
            yield event("response.output_text.done", **ids, content_index=0, text=text, logprobs=[])
            yield event("response.content_part.done", **ids, content_index=0, part=part)
        else:
            yield event("response.output_item.added", output_index=0, item={**item, "status": "in_progress"})
        yield event("response.output_item.done", output_index=0, item=item)
        yield event("response.completed", response=done)
