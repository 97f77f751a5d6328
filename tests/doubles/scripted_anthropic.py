"""TEST DOUBLE: a scripted Anthropic Messages server (the rule is in ``scripted_common``).

Serves ``POST /v1/messages`` (JSON, or SSE when ``stream`` is true: ``message_start``,
``ping``, per block ``content_block_start`` / ``content_block_delta`` (``text_delta`` or
``input_json_delta``) / ``content_block_stop``, ``message_delta`` with the stop reason
and output tokens, ``message_stop``), ``POST /v1/messages/count_tokens`` and
``GET /v1/models``. Any other path answers 404 with the API's error body.

Run it alone: ``python -m tests.doubles.scripted_anthropic``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.doubles.scripted_common import (
    Call,
    ScriptedServer,
    approx_tokens,
    fill_schema,
    grade,
    plan_tool_call,
    sse,
)


def _has_tool_result(body: dict[str, Any]) -> bool:
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return True
    return False


def _user_text(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(parts)


def _json_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("output_format") or (body.get("output_config") or {}).get("format") or {}
    return fmt.get("schema") if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None


class ScriptedAnthropic(ScriptedServer):
    """Anthropic Messages, scripted per conversation."""

    def routes(self) -> list:
        return [Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/{rest:path}", self._other, methods=["GET", "POST", "PUT", "DELETE"])]

    async def _other(self, request: Request) -> Response:
        self.record(Call(request.url.path, "other", {}))
        return JSONResponse({"type": "error", "error": {"type": "not_found_error",
                                                        "message": f"Not found: {request.url.path}"}},
                            status_code=404)

    async def _count(self, request: Request) -> Response:
        body = await request.json()
        self.record(Call(request.url.path, "count", body, model=str(body.get("model", ""))))
        return JSONResponse({"input_tokens": approx_tokens(body)})

    async def _models(self, request: Request) -> Response:
        self.record(Call(request.url.path, "models", {}))
        models = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-10-01T00:00:00Z"}
                  for m in ("claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929")]
        return JSONResponse({"data": models, "has_more": False, "first_id": models[0]["id"],
                             "last_id": models[-1]["id"]})

    def _blocks(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], Any]:
        """(kind, content blocks, planned tool call) for this conversation."""
        schema = _json_schema(body)
        if schema:  # structured output (Claude Code's session title): a side call whatever tools it lists
            return "side", [{"type": "text", "text": json.dumps(fill_schema(schema, "Hello world file"))}], None
        tools = [(t.get("name", ""), t.get("input_schema") or {}) for t in body.get("tools") or []]
        call = None if _has_tool_result(body) else plan_tool_call(tools, self.work)
        if call is not None:
            return "tool_call", [{"type": "text", "text": "I will do that with one command."},
                                 {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": call.name,
                                  "input": call.arguments}], call
        if _has_tool_result(body):
            return "final", [{"type": "text", "text": self.work.summary}], None
        verdict = None if tools else grade(_user_text(body))
        if verdict is not None:
            return "verdict", [{"type": "text", "text": verdict}], None
        return "side", [{"type": "text", "text": "Hello world file"}], None

    async def _messages(self, request: Request) -> Response:
        await self.held()
        body = await request.json()
        kind, blocks, call = self._blocks(body)
        model = str(body.get("model", "claude"))
        stream = bool(body.get("stream"))
        self.record(Call(request.url.path, kind, body, model=model, stream=stream, tool=call))
        usage = {"input_tokens": approx_tokens(body), "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0, "output_tokens": approx_tokens(blocks)}
        message = {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant", "model": model,
                   "content": blocks, "stop_reason": "tool_use" if call else "end_turn", "stop_sequence": None,
                   "usage": usage}
        if not stream:
            return JSONResponse(message)
        return StreamingResponse(self._events(message), media_type="text/event-stream")

    async def _events(self, message: dict[str, Any]):
        start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
        yield sse({"type": "message_start", "message": start}, "message_start")
        yield sse({"type": "ping"}, "ping")
        for index, block in enumerate(message["content"]):
            if block["type"] == "tool_use":
                yield sse({"type": "content_block_start", "index": index,
                           "content_block": {**block, "input": {}}}, "content_block_start")
                text = json.dumps(block["input"])
                for part in ("", text[: len(text) // 2], text[len(text) // 2:]):
                    yield sse({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": part}}, "content_block_delta")
            else:
                yield sse({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}}, "content_block_start")
                text = block["text"]
                for part in (text[: len(text) // 2], text[len(text) // 2:]):
                    yield sse({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": part}}, "content_block_delta")
            yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        yield sse({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                   "usage": {"output_tokens": message["usage"]["output_tokens"]}}, "message_delta")
        yield sse({"type": "message_stop"}, "message_stop")


if __name__ == "__main__":
    import time

    with ScriptedAnthropic() as server:
        print(server.url, flush=True)
        while True:
            time.sleep(3600)
