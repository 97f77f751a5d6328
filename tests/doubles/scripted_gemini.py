"""TEST DOUBLE: a scripted Gemini API server (the rule is in ``scripted_common``).

``POST /v1beta/models/MODEL:generateContent`` answers one ``GenerateContentResponse``;
``:streamGenerateContent?alt=sse`` answers the same shape chunk by chunk as SSE
``data:`` lines (text in pieces, a ``functionCall`` part whole, ``finishReason`` and the
final ``usageMetadata`` on the last chunk, every chunk carrying ``usageMetadata`` so
far, no ``[DONE]``); without ``alt=sse`` the chunks come as one JSON array, as Gemini
does. ``:countTokens`` answers ``totalTokens``; ``GET /v1beta/models`` lists models.
A request whose ``generationConfig`` asks for JSON gets an object filling its schema
(Gemini CLI's next-speaker and routing checks).
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
    plan_tool_call,
    sse,
)

MODELS = ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash-lite")


def _has_tool_result(body: dict[str, Any]) -> bool:
    return any("functionResponse" in part for content in body.get("contents") or []
               for part in content.get("parts") or [] if isinstance(part, dict))


def _tools(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for tool in body.get("tools") or []:
        for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
            schema = decl.get("parametersJsonSchema") or decl.get("parameters") or {}
            found.append((decl.get("name", ""), schema))
    return found


class ScriptedGemini(ScriptedServer):
    """Gemini ``generateContent`` / ``streamGenerateContent``, scripted per conversation."""

    def routes(self) -> list:
        return [Route("/{version}/models", self._models, methods=["GET"]),
                Route("/{version}/models/{target:path}", self._model_call, methods=["POST"]),
                Route("/{rest:path}", self._other, methods=["GET", "POST", "PUT", "DELETE"])]

    async def _other(self, request: Request) -> Response:
        self.record(Call(request.url.path, "other", {}))
        return JSONResponse({"error": {"code": 404, "message": f"Not found: {request.url.path}",
                                       "status": "NOT_FOUND"}}, status_code=404)

    async def _models(self, request: Request) -> Response:
        self.record(Call(request.url.path, "models", {}))
        return JSONResponse({"models": [
            {"name": f"models/{m}", "version": "001", "displayName": m, "inputTokenLimit": 1048576,
             "outputTokenLimit": 65536, "supportedGenerationMethods": ["generateContent", "countTokens"]}
            for m in MODELS]})

    def _parts(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], Any]:
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":  # next-speaker/routing checks: JSON, no tools
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            return "side", [{"text": json.dumps(fill_schema(schema, "The task is done."))}], None
        done = _has_tool_result(body)
        call = None if done else plan_tool_call(_tools(body), self.work)
        if call:
            return "tool_call", [{"text": "I will do that with one command."},
                                 {"functionCall": {"name": call.name, "args": call.arguments}}], call
        if done:
            return "final", [{"text": self.work.summary}], None
        return "side", [{"text": "Hello world file"}], None

    async def _model_call(self, request: Request) -> Response:
        model, _, method = request.path_params["target"].partition(":")
        body = await request.json()
        if method == "countTokens":
            self.record(Call(request.url.path, "count", body, model=model))
            return JSONResponse({"totalTokens": approx_tokens(body)})
        if method not in ("generateContent", "streamGenerateContent"):
            return await self._other(request)
        kind, parts, call = self._parts(body)
        stream = method == "streamGenerateContent"
        self.record(Call(request.url.path, kind, body, model=model, stream=stream, tool=call))
        prompt, output = approx_tokens(body.get("contents")), approx_tokens(parts)
        whole = {"candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": output,
                                   "totalTokenCount": prompt + output},
                 "modelVersion": model, "responseId": uuid.uuid4().hex[:22]}
        if not stream:
            return JSONResponse(whole)
        chunks = []
        for part in parts:
            pieces = [part] if "text" not in part else [{"text": part["text"][: len(part["text"]) // 2]},
                                                        {"text": part["text"][len(part["text"]) // 2:]}]
            for piece in pieces:
                chunks.append({"candidates": [{"content": {"parts": [piece], "role": "model"}, "index": 0}],
                               "usageMetadata": {"promptTokenCount": prompt, "totalTokenCount": prompt},
                               "modelVersion": model, "responseId": whole["responseId"]})
        chunks[-1]["candidates"][0]["finishReason"] = "STOP"
        chunks[-1]["usageMetadata"] = whole["usageMetadata"]
        if request.query_params.get("alt") != "sse":
            return JSONResponse(chunks)

        async def events():
            for chunk in chunks:
                yield sse(chunk).replace(b"\n\n", b"\r\n\r\n")

        return StreamingResponse(events(), media_type="text/event-stream")
